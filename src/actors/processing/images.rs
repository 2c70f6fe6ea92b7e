//! The images a member sent, read for a model that can see them (`llms.<name>.vision`):
//! bounded in size, base64-encoded, for the current turn only. Whatever cannot be shown
//! (a deleted file, one too large, a format the APIs refuse) is said in words instead, so
//! a photo never fails a turn.

use tokio::io::AsyncReadExt;

use crate::llm::ImageContent;
use crate::ports::{Attachment, AttachmentKind, InboundExtras};

/// The largest image shown to a model. Anthropic refuses bigger ones, and base64 makes a
/// request a third larger again; bigger images are described instead.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The image formats both wire formats (OpenAI's and Anthropic's) accept.
const SHOWABLE: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// How one attachment reaches the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sight {
    /// In words only: a file, an attachment that was never kept, or any image for a
    /// model that cannot see.
    Described,
    /// Sent with the message as an image.
    Shown,
    /// Shown when the message was sent, as history tells later turns: the image itself
    /// is not kept, so the model knows it cannot look again.
    WasShown,
    /// An image the model could see, but it cannot be shown: why, for the model to say.
    NotShown(String),
}

impl Sight {
    /// How history should describe the attachment to later turns.
    pub fn for_history(&self) -> Sight {
        match self {
            Sight::Shown => Sight::WasShown,
            other => other.clone(),
        }
    }
}

/// The images of `extras` to send with the member's message, and how each attachment (in
/// order) reaches the model. A model that cannot see gets no images and every attachment
/// described.
pub async fn load_images(extras: &InboundExtras, vision: bool) -> (Vec<ImageContent>, Vec<Sight>) {
    let mut images = Vec::new();
    let mut sights = Vec::with_capacity(extras.attachments.len());
    for attachment in &extras.attachments {
        let showable = vision && attachment.kind == AttachmentKind::Image;
        // An attachment that was never kept already carries its note.
        let sight = if showable && attachment.note.is_none() {
            match read_image(attachment).await {
                Ok(image) => {
                    images.push(image);
                    Sight::Shown
                }
                Err(why) => Sight::NotShown(why),
            }
        } else {
            Sight::Described
        };
        sights.push(sight);
    }
    (images, sights)
}

/// The image of `attachment`, read from where the channel kept it, or why it cannot be shown.
pub async fn read_image(attachment: &Attachment) -> Result<ImageContent, String> {
    let result = read_kept_image(attachment).await;
    if let Err(why) = &result {
        tracing::warn!(file = %attachment.file_name, %why, "an image cannot be shown to the model");
    }
    result
}

async fn read_kept_image(attachment: &Attachment) -> Result<ImageContent, String> {
    let path = attachment
        .path
        .as_deref()
        .ok_or_else(|| "hearth did not keep the file".to_string())?;
    let mime_type = mime_type(attachment).ok_or_else(|| {
        "hearth shows only JPEG, PNG, GIF and WebP images to the model".to_string()
    })?;
    let file = tokio::fs::File::open(path).await.map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            "the file is no longer there".to_string()
        } else {
            format!("the file cannot be read ({error})")
        }
    })?;
    let too_large = || format!("it is larger than {} MB", MAX_IMAGE_BYTES / (1024 * 1024));
    let length = file
        .metadata()
        .await
        .map_err(|error| format!("the file cannot be read ({error})"))?
        .len();
    if length > MAX_IMAGE_BYTES {
        return Err(too_large());
    }
    // Bounded even if the file grew after the check.
    let mut bytes = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|error| format!("the file cannot be read ({error})"))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(too_large());
    }
    Ok(ImageContent::from_bytes(mime_type, &bytes))
}

/// The attachment's media type if the APIs accept it; guessed from the file name when the
/// channel gave none.
fn mime_type(attachment: &Attachment) -> Option<&'static str> {
    let given = match &attachment.mime_type {
        Some(mime) => mime.to_ascii_lowercase(),
        None => {
            let extension = attachment
                .file_name
                .rsplit_once('.')?
                .1
                .to_ascii_lowercase();
            match extension.as_str() {
                "jpg" | "jpeg" => "image/jpeg".to_string(),
                other => format!("image/{other}"),
            }
        }
    };
    SHOWABLE.into_iter().find(|showable| *showable == given)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(file_name: &str, mime: Option<&str>, path: Option<&str>) -> Attachment {
        Attachment {
            kind: AttachmentKind::Image,
            file_name: file_name.into(),
            mime_type: mime.map(str::to_string),
            size_bytes: 3,
            path: path.map(str::to_string),
            note: None,
            duration_seconds: None,
            transcript: None,
        }
    }

    #[tokio::test]
    async fn images_are_read_for_a_model_that_sees_and_problems_become_notes() {
        let folder = tempfile::tempdir().unwrap();
        let photo = folder.path().join("photo.jpg");
        std::fs::write(&photo, b"Man").unwrap();
        let big = folder.path().join("big.png");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_IMAGE_BYTES + 1)
            .unwrap();
        let photo = photo.to_str().unwrap();
        let extras = InboundExtras {
            profile_id: None,
            quoted: None,
            attachments: vec![
                image("photo.jpg", Some("image/jpeg"), Some(photo)),
                image(
                    "gone.jpg",
                    Some("image/jpeg"),
                    Some("/nonexistent/gone.jpg"),
                ),
                image("big.png", None, Some(big.to_str().unwrap())),
                image("scan.tiff", Some("image/tiff"), Some(photo)),
                Attachment {
                    kind: AttachmentKind::File,
                    ..image("notes.txt", Some("text/plain"), Some(photo))
                },
                image("lost.jpg", Some("image/jpeg"), None),
            ],
        };

        let (images, sights) = load_images(&extras, true).await;
        assert_eq!(images, vec![ImageContent::from_bytes("image/jpeg", b"Man")]);
        assert_eq!(images[0].data_base64, "TWFu");
        assert_eq!(sights[0], Sight::Shown);
        assert_eq!(
            sights[1],
            Sight::NotShown("the file is no longer there".into())
        );
        assert_eq!(sights[2], Sight::NotShown("it is larger than 5 MB".into()));
        assert!(matches!(&sights[3], Sight::NotShown(why) if why.contains("JPEG, PNG")));
        assert_eq!(sights[4], Sight::Described);
        assert_eq!(
            sights[5],
            Sight::NotShown("hearth did not keep the file".into())
        );

        let (images, sights) = load_images(&extras, false).await;
        assert!(images.is_empty());
        assert!(sights.iter().all(|sight| *sight == Sight::Described));
    }

    #[test]
    fn the_media_type_is_guessed_from_the_name_when_missing() {
        assert_eq!(mime_type(&image("a.JPG", None, None)), Some("image/jpeg"));
        assert_eq!(mime_type(&image("a.webp", None, None)), Some("image/webp"));
        assert_eq!(mime_type(&image("a.heic", None, None)), None);
        assert_eq!(mime_type(&image("noext", None, None)), None);
        assert_eq!(
            mime_type(&image("a.bin", Some("IMAGE/PNG"), None)),
            Some("image/png")
        );
    }
}
