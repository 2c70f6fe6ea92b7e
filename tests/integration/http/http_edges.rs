//! What a request tells and learns at the edges of the HTTP API: the page's cookies are
//! `Secure` by `http.public_url` or a trusted proxy's `X-Forwarded-Proto`, never by the
//! `Host` header or an untrusted one's; an upload hearth cannot store is refused without
//! naming hearth's folders; API keys of any length are refused alike.

use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::voice::{field, file, post_form};

/// The `Set-Cookie` of the page's form cookie on `GET /sign-in` with `headers`.
async fn form_cookie(app: &Hearth, headers: &[(&str, &str)]) -> String {
    let mut request = reqwest::Client::new().get(format!("{}/sign-in", app.base_url));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|value| value.to_str().unwrap().to_string())
        .find(|cookie| cookie.starts_with("hearth_form="))
        .expect("a form cookie")
}

fn is_secure(cookie: &str) -> bool {
    cookie.split(';').any(|part| part.trim() == "Secure")
}

#[actix::test]
async fn cookies_are_secure_by_the_public_url_or_a_trusted_proxy_never_by_the_host() {
    let llm = ScriptedLlmServer::start();
    let plain = Hearth::start(&llm.base_url(), &[]).await;
    // A Host off loopback, a proxy nobody trusts: neither decides.
    let cookie = form_cookie(
        &plain,
        &[
            ("Host", "hearth.example.org"),
            ("X-Forwarded-Proto", "https"),
        ],
    )
    .await;
    assert!(!is_secure(&cookie), "{cookie}");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    plain.stop().await;

    let proxied = Hearth::start(
        &llm.base_url(),
        &[("HEARTH__HTTP__TRUSTED_PROXIES", "127.0.0.1")],
    )
    .await;
    let https = form_cookie(&proxied, &[("X-Forwarded-Proto", "https")]).await;
    assert!(is_secure(&https), "{https}");
    let http = form_cookie(&proxied, &[("X-Forwarded-Proto", "http")]).await;
    assert!(!is_secure(&http), "{http}");
    proxied.stop().await;

    let public = Hearth::start(
        &llm.base_url(),
        &[("HEARTH__HTTP__PUBLIC_URL", "https://hearth.home.example")],
    )
    .await;
    let cookie = form_cookie(&public, &[("Host", "localhost")]).await;
    assert!(is_secure(&cookie), "{cookie}");
    public.stop().await;
}

#[actix::test]
async fn an_upload_hearth_cannot_store_is_refused_without_its_folders() {
    let llm = ScriptedLlmServer::start();
    // A folder that cannot be made: under a file.
    let blocked = tempfile::NamedTempFile::new().unwrap();
    let folder = blocked.path().join("attachments");
    let folder = folder.to_str().unwrap();
    let app = Hearth::start(
        &llm.base_url(),
        &[("HEARTH__CHANNELS__TELEGRAM__ATTACHMENTS_DIR", folder)],
    )
    .await;
    let (status, answer) = post_form(
        &app,
        &[
            field("user_id", "alice"),
            file("audio", "note.ogg", "audio/ogg", b"OggS not really"),
        ],
    )
    .await;
    assert_eq!(status, 503, "{answer}");
    let said = answer.to_string();
    assert!(!said.contains(folder), "{said}");
    assert!(!said.contains("/tmp"), "{said}");
    app.stop().await;
}

#[actix::test]
async fn api_keys_of_any_length_are_refused_alike() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[]).await;
    let key = crate::support::hearth_app::API_KEY;
    let body = json!({"user_id": "alice", "text": "hi"});
    for wrong in [
        String::new(),
        key[..key.len() - 1].to_string(),
        format!("{key}x"),
        "x".repeat(4096),
    ] {
        let status = reqwest::Client::new()
            .post(format!("{}/inbound", app.base_url))
            .header("X-API-Key", wrong.as_str())
            .json(&body)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        assert_eq!(status, 401, "key of {} bytes", wrong.len());
    }
    app.stop().await;
}
