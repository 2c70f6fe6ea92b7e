//! What every channel does with a file a member sends: a name that is safe to store, what
//! the model is told about a file over the size limit, and the download itself, streamed to
//! disk and cut off at the limit whatever the platform said the size was, so a file is
//! never held in memory whole.

use std::path::Path;

use futures::{Stream, StreamExt};
use tokio::io::AsyncWriteExt;

/// Why a file was not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("it is larger than the {limit} bytes hearth accepts")]
    TooLarge { limit: u64 },
    #[error("{0}")]
    Failed(String),
}

/// Write `chunks` to a new file at `path` (its folder created), stopping and removing the
/// file as soon as more than `limit` bytes came; the bytes written.
pub async fn store_limited<S, B, E>(chunks: S, path: &Path, limit: u64) -> Result<u64, StoreError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    if let Some(folder) = path.parent() {
        tokio::fs::create_dir_all(folder).await.map_err(|error| {
            StoreError::Failed(format!("cannot create {}: {error}", folder.display()))
        })?;
    }
    let written = write_limited(chunks, path, limit).await;
    if written.is_err() {
        let _ = tokio::fs::remove_file(path).await;
    }
    written
}

async fn write_limited<S, B, E>(chunks: S, path: &Path, limit: u64) -> Result<u64, StoreError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let mut file = tokio::fs::File::create(path).await.map_err(|error| {
        StoreError::Failed(format!("cannot create {}: {error}", path.display()))
    })?;
    let mut written = 0u64;
    let mut chunks = std::pin::pin!(chunks);
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|error| StoreError::Failed(error.to_string()))?;
        let chunk = chunk.as_ref();
        written += chunk.len() as u64;
        if written > limit {
            return Err(StoreError::TooLarge { limit });
        }
        file.write_all(chunk).await.map_err(|error| {
            StoreError::Failed(format!("cannot write {}: {error}", path.display()))
        })?;
    }
    file.flush()
        .await
        .map_err(|error| StoreError::Failed(format!("cannot write {}: {error}", path.display())))?;
    Ok(written)
}

/// A file name from someone's phone, made safe to join to a folder: no separators, no
/// control characters, no `..`, at most 120 characters.
pub(crate) fn safe_file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|character| match character {
            '/' | '\\' | '\0' | ':' => '_',
            other if other.is_control() => '_',
            other => other,
        })
        .take(120)
        .collect();
    match cleaned.trim_matches('.') {
        "" => "file".to_string(),
        name => name.to_string(),
    }
}

/// Why a file over `limit_bytes` was not kept, for the model to pass on.
pub(crate) fn too_large_note(limit_bytes: u64) -> String {
    format!(
        "it is larger than the {} KB hearth accepts",
        limit_bytes / 1024
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stream_past_the_limit_is_cut_and_leaves_no_file() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("m-1").join("big.bin");
        let chunks = futures::stream::iter((0..10).map(|_| Ok::<_, String>(vec![7u8; 1000])));
        assert_eq!(
            store_limited(chunks, &path, 4096).await,
            Err(StoreError::TooLarge { limit: 4096 })
        );
        assert!(!path.exists());
        let chunks = futures::stream::iter((0..4).map(|_| Ok::<_, String>(vec![7u8; 1000])));
        assert_eq!(store_limited(chunks, &path, 4096).await, Ok(4000));
        assert_eq!(std::fs::read(&path).unwrap().len(), 4000);
    }

    #[test]
    fn file_names_cannot_leave_their_folder() {
        assert_eq!(safe_file_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_file_name(".."), "file");
        assert_eq!(safe_file_name("scan 1.pdf"), "scan 1.pdf");
    }
}
