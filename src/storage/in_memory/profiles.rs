//! The in-memory `UserProfiles`: each member's facts, in the store's main mutex.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::MemberId;
use crate::ports::{ProfileFacts, StorageError, UserProfiles};

#[async_trait]
impl UserProfiles for InMemoryStore {
    async fn get(&self, member_id: &MemberId) -> Result<ProfileFacts, StorageError> {
        Ok(self
            .lock()
            .profiles
            .get(member_id)
            .cloned()
            .unwrap_or_else(BTreeMap::new))
    }

    async fn set(
        &self,
        member_id: &MemberId,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), StorageError> {
        let mut state = self.lock();
        let facts = state.profiles.entry(member_id.clone()).or_default();
        match value {
            Some(value) => {
                facts.insert(key.to_string(), value.to_string());
            }
            None => {
                facts.remove(key);
            }
        }
        Ok(())
    }
}
