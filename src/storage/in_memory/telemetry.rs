//! The in-memory `TelemetrySink`: events kept in order, read back by `InMemoryStore::events`.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ports::{TelemetryEvent, TelemetrySink};

#[async_trait]
impl TelemetrySink for InMemoryStore {
    fn record(&self, event: TelemetryEvent) {
        self.lock().events.push(event);
    }
}
