//! Downloading a member's image, file or audio clip from the homeserver, streamed to disk
//! and cut off at `max_attachment_bytes` whatever the event says its size is: never held in
//! memory whole. An encrypted file's ciphertext is streamed to a file beside the target and
//! decrypted file to file (its hash checked), then removed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use matrix_sdk::ruma::OwnedMxcUri;
use matrix_sdk::ruma::events::room::{EncryptedFile, MediaSource};
use matrix_sdk_crypto::{AttachmentDecryptor, MediaEncryptionInfo};

use super::MatrixAdapter;
use crate::actors::channels::core::attachments::{StoreError, store_limited};

/// A download slower than this is abandoned (a 20 MB file at a slow 50 kB/s fits).
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(400);
/// Read and written at a time while decrypting.
const DECRYPT_BUFFER: usize = 64 * 1024;

/// Store `source` at `path`, at most `limit` bytes; the bytes stored.
pub(super) async fn download(
    adapter: &MatrixAdapter,
    source: MediaSource,
    path: &Path,
    limit: u64,
) -> Result<u64, StoreError> {
    match source {
        MediaSource::Plain(uri) => fetch(adapter, &uri, path, limit).await,
        MediaSource::Encrypted(file) => {
            // AES-CTR keeps the size: the ciphertext is under the limit when the file is.
            let ciphertext = path.with_extension("encrypted.partial");
            let fetched = fetch(adapter, &file.url, &ciphertext, limit).await;
            let stored = match fetched {
                Ok(_) => decrypt(*file, ciphertext.clone(), path.to_path_buf(), limit).await,
                Err(error) => Err(error),
            };
            let _ = tokio::fs::remove_file(&ciphertext).await;
            if stored.is_err() {
                let _ = tokio::fs::remove_file(path).await;
            }
            stored
        }
    }
}

/// The media `uri` names, streamed from the homeserver's authenticated media API (the
/// legacy one for a homeserver without it) into `path`.
async fn fetch(
    adapter: &MatrixAdapter,
    uri: &OwnedMxcUri,
    path: &Path,
    limit: u64,
) -> Result<u64, StoreError> {
    let (server, media_id) = uri
        .parts()
        .map_err(|error| StoreError::Failed(format!("{uri} is not a media uri: {error}")))?;
    let token = adapter
        .client
        .access_token()
        .ok_or_else(|| StoreError::Failed("not logged in".into()))?;
    let homeserver = adapter.client.homeserver();
    let http = reqwest::Client::builder()
        .timeout(DOWNLOAD_TIMEOUT)
        .build()
        .map_err(|error| StoreError::Failed(error.to_string()))?;
    let get = |route: &str| {
        let url = homeserver.join(&format!("{route}/{server}/{media_id}"));
        let (http, token) = (http.clone(), token.clone());
        async move {
            let url = url.map_err(|error| StoreError::Failed(error.to_string()))?;
            http.get(url)
                .bearer_auth(token)
                .send()
                .await
                .map_err(|error| StoreError::Failed(error.without_url().to_string()))
        }
    };
    let mut response = get("_matrix/client/v1/media/download").await?;
    // A homeserver without authenticated media does not know the route.
    if matches!(response.status().as_u16(), 404 | 405) {
        response = get("_matrix/media/v3/download").await?;
    }
    if !response.status().is_success() {
        return Err(StoreError::Failed(format!(
            "the homeserver answered {}",
            response.status()
        )));
    }
    if response
        .content_length()
        .is_some_and(|length| length > limit)
    {
        return Err(StoreError::TooLarge { limit });
    }
    store_limited(response.bytes_stream(), path, limit).await
}

/// Decrypt `ciphertext` into `path` on a blocking thread, a buffer at a time.
async fn decrypt(
    file: EncryptedFile,
    ciphertext: PathBuf,
    path: PathBuf,
    limit: u64,
) -> Result<u64, StoreError> {
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let failed = |what: &str, error: &dyn std::fmt::Display| {
            StoreError::Failed(format!("{what}: {error}"))
        };
        let mut input = std::io::BufReader::new(
            std::fs::File::open(&ciphertext)
                .map_err(|error| failed("cannot read the download", &error))?,
        );
        let info: MediaEncryptionInfo = file.into();
        let mut decryptor = AttachmentDecryptor::new(&mut input, info)
            .map_err(|error| failed("cannot decrypt", &error))?;
        let mut output = std::fs::File::create(&path)
            .map_err(|error| failed(&format!("cannot create {}", path.display()), &error))?;
        let mut buffer = vec![0u8; DECRYPT_BUFFER];
        let mut written = 0u64;
        loop {
            // The hash is checked when the end is read: a bad file fails here.
            let read = decryptor
                .read(&mut buffer)
                .map_err(|error| failed("cannot decrypt", &error))?;
            if read == 0 {
                break;
            }
            written += read as u64;
            if written > limit {
                return Err(StoreError::TooLarge { limit });
            }
            output
                .write_all(&buffer[..read])
                .map_err(|error| failed(&format!("cannot write {}", path.display()), &error))?;
        }
        Ok(written)
    })
    .await
    .map_err(|error| StoreError::Failed(format!("decrypting stopped: {error}")))?
}
