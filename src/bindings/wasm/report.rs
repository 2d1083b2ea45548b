//! The report's wasm binding, apart from `src/wasm.rs`: a report (JSON, the npm package's
//! `ReportData`) in, the page or the chart out. Errors are thrown as the same JSON strings as the
//! rest of the binding (`{"code": "invalid_config", ...}`), which the host turns into a
//! `CompactorError`. The JSON is read in `bindings/report.rs`, shared with the component.

use wasm_bindgen::prelude::*;

use crate::bindings::report::parse;

fn thrown(error: crate::Error) -> JsValue {
    JsValue::from_str(&crate::bindings::json::error_json(&error))
}

/// The self-contained HTML page of a report.
#[wasm_bindgen(js_name = renderReport)]
pub fn render_report(report: &str) -> Result<String, JsValue> {
    Ok(crate::report::render_html(&parse(report).map_err(thrown)?))
}

/// The report's chart alone (a `<figure>` with an inline `<svg>`).
#[wasm_bindgen(js_name = renderReportChart)]
pub fn render_report_chart(report: &str) -> Result<String, JsValue> {
    Ok(crate::report::render_chart(&parse(report).map_err(thrown)?))
}
