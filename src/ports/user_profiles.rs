//! What hearth knows about each family member (`name`, `address`, `phone`, ...).

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::StorageError;
use crate::ids::MemberId;

/// A member's profile: key to value, sorted for stable prompts.
pub type ProfileFacts = BTreeMap<String, String>;

#[async_trait]
pub trait UserProfiles: Send + Sync {
    async fn get(&self, member_id: &MemberId) -> Result<ProfileFacts, StorageError>;
    /// Set one key; `None` removes it.
    async fn set(
        &self,
        member_id: &MemberId,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), StorageError>;
}
