//! Where a platform noted a prompt (a confirmation, a fired reminder), in its
//! `ChannelState`: under `confirmation:<prompt id>:<place>`, one place (chat, room) for a
//! member's own prompt and each parent's for an escalated one, so a close reaches every
//! copy.

use super::DeliveryError;
use crate::ids::PromptId;
use crate::ports::{ChannelState, StorageError};

/// The key noting that prompt `prompt_id` is shown at `place`.
pub(crate) fn shown_key(prompt_id: &PromptId, place: &str) -> String {
    format!("confirmation:{prompt_id}:{place}")
}

/// Every place `channel` noted prompt `prompt_id` is shown, as (key, value);
/// also the single `confirmation:<id>` of earlier versions, so a prompt shown before an
/// upgrade is still closed.
pub(crate) async fn shown_places(
    state: &dyn ChannelState,
    channel: &str,
    prompt_id: &PromptId,
) -> Result<Vec<(String, String)>, DeliveryError> {
    let unreadable = |error: StorageError| DeliveryError::Transient {
        reason: format!("cannot read where prompt {prompt_id} is shown: {error}"),
        retry_after: None,
    };
    let mut found = state
        .list_state(channel, &shown_key(prompt_id, ""))
        .await
        .map_err(unreadable)?;
    let earlier = format!("confirmation:{prompt_id}");
    if let Some(value) = state
        .get_state(channel, &earlier)
        .await
        .map_err(unreadable)?
    {
        found.push((earlier, value));
    }
    Ok(found)
}
