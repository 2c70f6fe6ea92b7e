//! A question the member's running turn asks them (an MCP server's) on the chat page: one
//! labelled control per field it asks for (text, number, checkbox, list), or a text field
//! when it names none, with Decline and Cancel. The posted form becomes the answer a
//! member would type (`name: value` lines, "decline", "cancel"), so it is read by the same
//! rules and a value that does not fit is explained and asked again. A form posted when
//! its question is no longer open (posted twice, cancelled, expired) does nothing.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};

use super::chat::deliver;
use super::layout;
use super::session::{self, SignedIn};
use crate::actors::request_queue::{AskedQuestion, ShowQuestion};
use crate::http::HttpState;
use crate::ids::ConversationKey;
use crate::secrets;
use crate::turn::{FieldKind, FormField, QuestionForm};

/// The longest value one field takes: a question's answer is short.
const MAX_VALUE_CHARS: usize = 2_000;

/// The question `signed_in` is asked in `conversation` now, if any.
pub(super) async fn open_in(
    state: &HttpState,
    signed_in: &SignedIn,
    conversation: &ConversationKey,
) -> Option<AskedQuestion> {
    state
        .queue
        .send(ShowQuestion {
            conversation_key: conversation.clone(),
            member_id: signed_in.member.id.clone(),
        })
        .await
        .ok()
        .flatten()
}

fn control(index: usize, field: &FormField) -> Markup {
    let id = format!("q-{index}");
    let name = format!("f.{}", field.name);
    let described = field.description.as_ref().map(|_| format!("{id}-about"));
    let label = html! {
        label for=(id) { (field.title) @if field.required { " (required)" } }
    };
    let about = html! {
        @if let (Some(text), Some(about)) = (&field.description, &described) {
            small id=(about) { (text) }
        }
    };
    html! {
        div.field {
            @match &field.kind {
                FieldKind::Boolean => {
                    input type="checkbox" id=(id) name=(name) value="yes"
                        aria-describedby=[described.as_deref()]
                        checked[field.default.as_deref() == Some("true")];
                    (label) (about)
                }
                FieldKind::Choice { options, multiple } => {
                    (label) (about)
                    select id=(id) name=(name) multiple[*multiple] required[field.required]
                        aria-describedby=[described.as_deref()] {
                        @if !field.required && !*multiple { option value="" { "—" } }
                        @for (value, text) in options {
                            option value=(value) selected[field.default.as_deref() == Some(value)] { (text) }
                        }
                    }
                }
                FieldKind::Number { integer, minimum, maximum } => {
                    (label) (about)
                    input type="number" id=(id) name=(name)
                        step=(if *integer { "1" } else { "any" })
                        min=[minimum] max=[maximum] required[field.required]
                        value=[field.default.as_deref()] inputmode=(if *integer { "numeric" } else { "decimal" })
                        aria-describedby=[described.as_deref()];
                }
                FieldKind::Text { input } => {
                    (label) (about)
                    input type=(input) id=(id) name=(name) required[field.required]
                        maxlength=(MAX_VALUE_CHARS) value=[field.default.as_deref()]
                        aria-describedby=[described.as_deref()];
                }
            }
        }
    }
}

/// The question with its form, as the chat log shows it.
pub(super) fn card(signed_in: &SignedIn, asked: &AskedQuestion) -> Markup {
    let nonce = secrets::random_key("").unwrap_or_default();
    let fields = asked
        .form
        .as_ref()
        .map_or(&[][..], |form| form.fields.as_slice());
    let intro = asked
        .form
        .as_ref()
        .map_or(asked.text.as_str(), |form| form.intro.as_str());
    html! {
        section.question aria-label="A question for you" {
            p.question-text { (intro) }
            form.question-form method="post" action="/chat/answer" {
                input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                input type="hidden" name="nonce" value=(nonce);
                @if fields.is_empty() {
                    div.field {
                        label for="q-answer" { "Your answer" }
                        textarea id="q-answer" name="answer" rows="2" maxlength=(MAX_VALUE_CHARS) required {}
                    }
                }
                @for (index, field) in fields.iter().enumerate() { (control(index, field)) }
                div.actions {
                    button type="submit" name="action" value="accept" { "Send answer" }
                    button type="submit" name="action" value="decline" formnovalidate { "Decline" }
                    button type="submit" name="action" value="cancel" formnovalidate { "Cancel" }
                }
            }
        }
    }
}

/// The answer a member would have typed for the posted `pairs`, or what is wrong.
pub(super) fn answer_text(
    form: Option<&QuestionForm>,
    pairs: &[(String, String)],
) -> Result<String, String> {
    fn values<'a>(pairs: &'a [(String, String)], key: &str) -> Vec<&'a str> {
        pairs
            .iter()
            .filter(|(name, _)| name == key)
            .map(|(_, value)| value.trim())
            .collect()
    }
    let posted = |key: &str| values(pairs, key).into_iter();
    match posted("action").next() {
        Some("decline") => return Ok("decline".to_owned()),
        Some("cancel") => return Ok("cancel".to_owned()),
        Some("accept") | None => {}
        Some(other) => return Err(format!("action {other:?} is not accept, decline or cancel")),
    }
    let fields = form.map_or(&[][..], |form| form.fields.as_slice());
    let one_line = |title: &str, value: &str| {
        if value.contains(['\n', '\r']) {
            Err(format!("“{title}” takes one line; remove the line breaks"))
        } else if value.chars().count() > MAX_VALUE_CHARS {
            Err(format!(
                "“{title}” takes at most {MAX_VALUE_CHARS} characters"
            ))
        } else {
            Ok(())
        }
    };
    if fields.is_empty() {
        let answer = posted("answer").next().unwrap_or_default();
        if answer.is_empty() || answer.chars().count() > MAX_VALUE_CHARS {
            return Err(format!(
                "“Your answer” takes 1 to {MAX_VALUE_CHARS} characters"
            ));
        }
        return Ok(answer.to_owned());
    }
    let mut lines = Vec::new();
    for field in fields {
        let key = format!("f.{}", field.name);
        let values: Vec<&str> = posted(&key).filter(|value| !value.is_empty()).collect();
        for value in &values {
            one_line(&field.title, value)?;
        }
        let value = match &field.kind {
            // An unchecked box is not posted at all: it says no.
            FieldKind::Boolean if values.is_empty() => "no".to_owned(),
            FieldKind::Boolean => "yes".to_owned(),
            _ => values.join(", "),
        };
        if !value.is_empty() {
            lines.push(format!("{}: {value}", field.name));
        }
    }
    Ok(lines.join("\n"))
}

/// `POST /chat/answer`: the question's form, answered.
pub async fn answer(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<Vec<(String, String)>>,
) -> HttpResponse {
    let posted = body.into_inner();
    let value_of = |key: &str| {
        posted
            .iter()
            .find(|(name, _)| name == key)
            .map_or("", |(_, value)| value.as_str())
    };
    let signed_in = match session::signed_in_form(&state, &request, value_of("csrf")).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let Some(conversation) = super::chat::conversation_of(&signed_in) else {
        return layout::not_found(Some(&signed_in));
    };
    let Some(asked) = open_in(&state, &signed_in, &conversation).await else {
        return layout::problem(
            StatusCode::CONFLICT,
            Some(&signed_in),
            "That question is no longer open (answered already, cancelled or expired). \
             Go back to the chat to see where things stand.",
        );
    };
    let text = match answer_text(asked.form.as_ref(), &posted) {
        Ok(text) => text,
        Err(problem) => {
            return layout::problem(
                StatusCode::BAD_REQUEST,
                Some(&signed_in),
                &format!("{problem}, then send the answer again."),
            );
        }
    };
    deliver(&request, &state, &signed_in, text, value_of("nonce"), true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> QuestionForm {
        let field = |name: &str, kind, required| FormField {
            name: name.into(),
            title: name.to_uppercase(),
            description: None,
            required,
            kind,
            default: None,
        };
        QuestionForm {
            intro: "everything asks: who are you?".into(),
            fields: vec![
                field("name", FieldKind::Text { input: "text" }, true),
                field("check", FieldKind::Boolean, false),
                field(
                    "count",
                    FieldKind::Number {
                        integer: true,
                        minimum: None,
                        maximum: None,
                    },
                    false,
                ),
                field(
                    "tools",
                    FieldKind::Choice {
                        options: vec![("a".into(), "A".into()), ("b".into(), "B".into())],
                        multiple: true,
                    },
                    false,
                ),
            ],
        }
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn a_posted_form_is_the_answer_a_member_would_type() {
        let posted = pairs(&[
            ("action", "accept"),
            ("f.name", " Alice "),
            ("f.count", ""),
            ("f.tools", "a"),
            ("f.tools", "b"),
            ("f.unknown", "x"),
        ]);
        assert_eq!(
            answer_text(Some(&form()), &posted).unwrap(),
            "name: Alice\ncheck: no\ntools: a, b"
        );
        let declined = pairs(&[("action", "decline"), ("f.name", "")]);
        assert_eq!(answer_text(Some(&form()), &declined).unwrap(), "decline");
        let cancelled = pairs(&[("action", "cancel")]);
        assert_eq!(answer_text(None, &cancelled).unwrap(), "cancel");
        let plain = pairs(&[("action", "accept"), ("answer", " blue ")]);
        assert_eq!(answer_text(None, &plain).unwrap(), "blue");
    }

    #[test]
    fn a_value_that_could_smuggle_another_line_is_refused_naming_its_field() {
        let posted = pairs(&[("f.name", "Alice\ncount: 9")]);
        let problem = answer_text(Some(&form()), &posted).unwrap_err();
        assert!(problem.contains("“NAME” takes one line"), "{problem}");
        let long = "x".repeat(MAX_VALUE_CHARS + 1);
        let posted = pairs(&[("f.name", long.as_str())]);
        assert!(
            answer_text(Some(&form()), &posted)
                .unwrap_err()
                .contains("at most")
        );
        assert!(answer_text(None, &pairs(&[("answer", "  ")])).is_err());
        assert!(answer_text(None, &pairs(&[("action", "launch")])).is_err());
    }
}
