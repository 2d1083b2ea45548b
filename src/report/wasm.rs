//! The report's wasm binding, apart from `src/wasm.rs`: a report (JSON, the npm package's
//! `ReportData`) in, the page or the chart out. Errors are thrown as the same JSON strings as the
//! rest of the binding (`{"code": "invalid_config", ...}`), which the host turns into a
//! `CompactorError`.

use wasm_bindgen::prelude::*;

use super::Report;
use crate::Error;

fn parse(json: &str) -> Result<Report, JsValue> {
    serde_json::from_str(json).map_err(|e| {
        let error = Error::InvalidConfig {
            field: "report".into(),
            message: crate::error::strip_position(&e.to_string()),
        };
        let mut value = serde_json::to_value(&error).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            map.insert("message".into(), error.to_string().into());
        }
        JsValue::from_str(&value.to_string())
    })
}

/// The self-contained HTML page of a report.
#[wasm_bindgen(js_name = renderReport)]
pub fn render_report(report: &str) -> Result<String, JsValue> {
    Ok(super::render_html(&parse(report)?))
}

/// The report's chart alone (a `<figure>` with an inline `<svg>`).
#[wasm_bindgen(js_name = renderReportChart)]
pub fn render_report_chart(report: &str) -> Result<String, JsValue> {
    Ok(super::render_chart(&parse(report)?))
}
