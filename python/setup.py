"""The package's metadata is in pyproject.toml; this only refuses to build a wheel without the
core. `core.wasm` (the WebAssembly Component every call runs) is not committed: it is built
from the Rust crate by `bash scripts/build-component.sh` at the repository's root, which needs
Rust with the `wasm32-wasip2` target (`rustup target add wasm32-wasip2`)."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

CORE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "context_compactor", "core.wasm")


class BuildPyWithCore(build_py):
    def run(self) -> None:
        if not os.path.isfile(CORE):
            raise SystemExit(
                "context-compactor: the core is missing (src/context_compactor/core.wasm), so the package "
                "would install and fail at the first Compactor(). Build it first, from the repository's "
                "root: `rustup target add wasm32-wasip2` (once), then `bash scripts/build-component.sh`, "
                "then `pip install ./python`."
            )
        super().run()


setup(cmdclass={"build_py": BuildPyWithCore})
