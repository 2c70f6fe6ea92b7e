//! Where a platform noted the prompts of a confirmation, in its `ChannelState`: under
//! `confirmation:<id>:<place>`, one place (chat, room) for a member's own confirmation and
//! each parent's for an escalated one, so a close reaches every prompt.

use super::DeliveryError;
use crate::ids::ConfirmationId;
use crate::ports::{ChannelState, StorageError};

/// The key noting that confirmation `confirmation_id` is shown at `place`.
pub(crate) fn shown_key(confirmation_id: &ConfirmationId, place: &str) -> String {
    format!("confirmation:{confirmation_id}:{place}")
}

/// Every place `channel` noted confirmation `confirmation_id` is shown, as (key, value);
/// also the single `confirmation:<id>` of earlier versions, so a prompt shown before an
/// upgrade is still closed.
pub(crate) async fn shown_places(
    state: &dyn ChannelState,
    channel: &str,
    confirmation_id: &ConfirmationId,
) -> Result<Vec<(String, String)>, DeliveryError> {
    let unreadable = |error: StorageError| DeliveryError::Transient {
        reason: format!("cannot read where confirmation {confirmation_id} is shown: {error}"),
        retry_after: None,
    };
    let mut found = state
        .list_state(channel, &shown_key(confirmation_id, ""))
        .await
        .map_err(unreadable)?;
    let earlier = format!("confirmation:{confirmation_id}");
    if let Some(value) = state
        .get_state(channel, &earlier)
        .await
        .map_err(unreadable)?
    {
        found.push((earlier, value));
    }
    Ok(found)
}
