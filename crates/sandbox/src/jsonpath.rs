//! The JSONPath subset `additionalPrinterColumns` use (`k8s.io/client-go/util/jsonpath`).
//!
//! SCAFFOLD: the bodies below are placeholders being replaced by the real implementation.

use serde_json::Value;

/// A parsed JSONPath expression.
#[derive(Debug, Clone)]
pub struct JsonPath {
    raw: String,
}

impl JsonPath {
    /// Parses `expr` (`.spec.size`, `.status.conditions[?(@.type=="Ready")].status`).
    ///
    /// # Errors
    ///
    /// Why it is not a JSONPath the sandbox evaluates.
    pub fn parse(expr: &str) -> Result<Self, String> {
        Ok(Self { raw: expr.to_owned() })
    }

    /// The values it selects in `obj`.
    #[must_use]
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<&'a Value> {
        let _ = (&self.raw, obj);
        Vec::new()
    }
}
