//! `PendingActions` on SQLite: table `pending_actions`, and the inbox status `suspended`.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::outbox::insert_outgoing;
use super::{SqliteStore, conversation_from_row, database_error, id_column};
use crate::ids::{ConfirmationId, MemberId};
use crate::ports::{
    AnswerPlace, AnswerRefused, Decision, Fence, OpenConfirmation, OutgoingMessage, PendingActions,
    PendingConfirmation, StorageError,
};

macro_rules! select_confirmation {
    ($tail:literal) => {
        concat!(
            "SELECT id, inbox_id, member_id, channel, conversation_id, profile_id, tool_name, ",
            "arguments, prompt, turn_state, status, decision, expires_at_ms, created_at_ms, ",
            "approvers ",
            "FROM pending_actions ",
            $tail
        )
    };
}

fn json_column(row: &SqliteRow, column: &str) -> Result<serde_json::Value, StorageError> {
    let text: String = row.get(column);
    serde_json::from_str(&text)
        .map_err(|error| StorageError::Corrupt(format!("pending_actions.{column}: {error}")))
}

fn confirmation_from_row(row: &SqliteRow) -> Result<PendingConfirmation, StorageError> {
    Ok(PendingConfirmation {
        id: id_column(row, "pending_actions", "id")?,
        inbox_id: row.get("inbox_id"),
        member_id: id_column(row, "pending_actions", "member_id")?,
        conversation: conversation_from_row(row, "pending_actions")?,
        profile_id: row.get("profile_id"),
        tool_name: row.get("tool_name"),
        arguments: json_column(row, "arguments")?,
        prompt: row.get("prompt"),
        turn_state: json_column(row, "turn_state")?,
        expires_at_ms: row.get("expires_at_ms"),
        created_at_ms: row.get("created_at_ms"),
        approvers: serde_json::from_str(&row.get::<String, _>("approvers")).map_err(|error| {
            StorageError::Corrupt(format!("pending_actions.approvers: {error}"))
        })?,
    })
}

fn decision_from_row(row: &SqliteRow) -> Result<Option<Decision>, StorageError> {
    let decision: Option<String> = row.get("decision");
    decision.as_deref().map(Decision::parse).transpose()
}

#[async_trait]
impl PendingActions for SqliteStore {
    async fn suspend_fenced(
        &self,
        confirmation: &PendingConfirmation,
        prompts: &[OutgoingMessage],
        fence: Option<&Fence>,
    ) -> Result<Vec<i64>, StorageError> {
        let confirmation = confirmation.clone();
        let prompts = prompts.to_vec();
        let (coordination, fence) = (self.coordination(), fence.cloned());
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    coordination.check(fence.as_ref())?;
                    let suspended = sqlx::query(
                        "UPDATE inbox SET status = 'suspended' \
                         WHERE id = ? AND status IN ('accepted', 'suspended')",
                    )
                    .bind(&confirmation.inbox_id)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    if suspended.rows_affected() != 1 {
                        return Err(StorageError::Corrupt(format!(
                            "inbox message {:?} is unknown or already answered",
                            confirmation.inbox_id
                        )));
                    }
                    sqlx::query(
                        "INSERT INTO pending_actions (id, inbox_id, member_id, channel, \
                         conversation_id, profile_id, tool_name, arguments, prompt, turn_state, \
                         expires_at_ms, created_at_ms, approvers) \
                         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(confirmation.id.as_str())
                    .bind(&confirmation.inbox_id)
                    .bind(confirmation.member_id.as_str())
                    .bind(confirmation.conversation.channel())
                    .bind(confirmation.conversation.conversation_id())
                    .bind(&confirmation.profile_id)
                    .bind(&confirmation.tool_name)
                    .bind(confirmation.arguments.to_string())
                    .bind(&confirmation.prompt)
                    .bind(confirmation.turn_state.to_string())
                    .bind(confirmation.expires_at_ms)
                    .bind(confirmation.created_at_ms)
                    .bind(serde_json::json!(confirmation.approvers).to_string())
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    let mut ids = Vec::with_capacity(prompts.len());
                    for prompt in &prompts {
                        ids.push(insert_outgoing(connection, prompt).await?);
                    }
                    Ok(ids)
                })
            })
            .await
    }

    async fn answer(
        &self,
        confirmation_id: &ConfirmationId,
        member_id: &MemberId,
        place: &AnswerPlace,
        approve: bool,
        now_ms: i64,
    ) -> Result<Result<PendingConfirmation, AnswerRefused>, StorageError> {
        // Asked elsewhere: as if it did not exist (its channel and conversation never change).
        let asked = sqlx::query(select_confirmation!("WHERE id = ?"))
            .bind(confirmation_id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        match asked {
            Some(row) if confirmation_from_row(&row)?.admits_place(place) => {}
            _ => return Ok(Err(AnswerRefused::Unknown)),
        }
        let decision = if approve {
            Decision::Approved
        } else {
            Decision::Denied
        };
        let (id, member) = (confirmation_id.to_string(), member_id.clone());
        let answered = self
            .writer
            .run(move |connection| {
                Box::pin(async move {
                    // One statement decides, so two answers racing cannot both win.
                    let row = sqlx::query(
                        "UPDATE pending_actions SET status = 'answered', decision = ?, \
                         answered_at_ms = ? WHERE id = ? \
                         AND ((approvers = '[]' AND member_id = ?) \
                              OR EXISTS (SELECT 1 FROM json_each(approvers) WHERE value = ?)) \
                         AND status = 'pending' AND expires_at_ms > ? RETURNING id",
                    )
                    .bind(decision.as_str())
                    .bind(now_ms)
                    .bind(&id)
                    .bind(member.as_str())
                    .bind(member.as_str())
                    .bind(now_ms)
                    .fetch_optional(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    Ok(row.is_some())
                })
            })
            .await?;
        let row = sqlx::query(select_confirmation!("WHERE id = ?"))
            .bind(confirmation_id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        let Some(row) = row else {
            return Ok(Err(AnswerRefused::Unknown));
        };
        let confirmation = confirmation_from_row(&row)?;
        if answered {
            return Ok(Ok(confirmation));
        }
        let status: String = row.get("status");
        Ok(Err(if !confirmation.answerable_by(member_id) {
            AnswerRefused::NotYours
        } else if status == "pending" || decision_from_row(&row)? == Some(Decision::Expired) {
            // Still pending yet not answerable: its time has passed.
            AnswerRefused::Expired
        } else if status == "answered" {
            AnswerRefused::InProgress
        } else {
            AnswerRefused::AlreadyAnswered
        }))
    }

    async fn expire_due(&self, now_ms: i64) -> Result<Vec<PendingConfirmation>, StorageError> {
        let ids: Vec<String> = self
            .writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query_scalar(
                        "UPDATE pending_actions SET status = 'answered', decision = 'expired', \
                         answered_at_ms = ? WHERE status = 'pending' AND expires_at_ms <= ? \
                         RETURNING id",
                    )
                    .bind(now_ms)
                    .bind(now_ms)
                    .fetch_all(&mut *connection)
                    .await
                    .map_err(database_error)
                })
            })
            .await?;
        let mut expired = Vec::with_capacity(ids.len());
        for id in ids {
            let row = sqlx::query(select_confirmation!("WHERE id = ?"))
                .bind(&id)
                .fetch_one(&self.pool)
                .await
                .map_err(database_error)?;
            expired.push(confirmation_from_row(&row)?);
        }
        expired.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        Ok(expired)
    }

    async fn consume(
        &self,
        confirmation_id: &ConfirmationId,
    ) -> Result<Option<Decision>, StorageError> {
        let id = confirmation_id.to_string();
        let decision: Option<String> = self
            .writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query_scalar(
                        "UPDATE pending_actions SET status = 'consumed' \
                         WHERE id = ? AND status = 'answered' RETURNING decision",
                    )
                    .bind(&id)
                    .fetch_optional(&mut *connection)
                    .await
                    .map_err(database_error)
                })
            })
            .await?;
        decision.as_deref().map(Decision::parse).transpose()
    }

    async fn interrupted(&self) -> Result<Vec<PendingConfirmation>, StorageError> {
        let rows = sqlx::query(select_confirmation!(
            "WHERE status = 'consumed' \
             AND inbox_id IN (SELECT id FROM inbox WHERE status = 'suspended') \
             AND id = (SELECT latest.id FROM pending_actions AS latest \
                       WHERE latest.inbox_id = pending_actions.inbox_id \
                       ORDER BY latest.created_at_ms DESC, latest.id DESC LIMIT 1) \
             ORDER BY created_at_ms, id"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(confirmation_from_row).collect()
    }

    async fn waiting_for(
        &self,
        inbox_id: &str,
    ) -> Result<Option<PendingConfirmation>, StorageError> {
        let row = sqlx::query(select_confirmation!(
            "WHERE inbox_id = ? AND status = 'pending' \
             ORDER BY created_at_ms DESC, id DESC LIMIT 1"
        ))
        .bind(inbox_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        row.as_ref().map(confirmation_from_row).transpose()
    }

    async fn open(&self) -> Result<Vec<OpenConfirmation>, StorageError> {
        let rows = sqlx::query(select_confirmation!(
            "WHERE status IN ('pending', 'answered') ORDER BY created_at_ms, id"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter()
            .map(|row| {
                Ok(OpenConfirmation {
                    confirmation: confirmation_from_row(row)?,
                    decision: decision_from_row(row)?,
                })
            })
            .collect()
    }
}
