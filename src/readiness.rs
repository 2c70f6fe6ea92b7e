//! Readiness of the parts that must work for hearth to serve: each component
//! (queue, channels) reports its state here; `GET /readyz` reads it.

use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ComponentState {
    pub ready: bool,
    pub detail: String,
}

#[derive(Default)]
pub struct Readiness {
    components: Mutex<BTreeMap<String, ComponentState>>,
}

impl Readiness {
    pub fn set(&self, component: &str, ready: bool, detail: &str) {
        self.components
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                component.to_string(),
                ComponentState {
                    ready,
                    detail: detail.to_string(),
                },
            );
    }

    pub fn snapshot(&self) -> BTreeMap<String, ComponentState> {
        self.components
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
