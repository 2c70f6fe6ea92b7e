//! The Planner: from a classified intent and the parameters collected so far, the steps to
//! take. A value the member gave that could not be read gives `AskUser` for it, saying what
//! was wrong in hearth's own words; otherwise a missing parameter gives `AskUser` for the
//! first one, its question worded by the model; complete parameters give `Respond(pre)`
//! (when the intent has a `pre` template),
//! `ToolCall` and `Respond(post)`. Also the templates' rendering (`{param}`,
//! `{result.field}`, `{error}`) and the model's wording of a result when there is no `post`
//! template.

use std::collections::BTreeMap;

use serde_json::Value;

use super::llm::{AskError, ModelAccess};
use super::registry::Intent;
use super::unreadable::Unreadable;
use crate::llm::ChatMessage;
use crate::ports::PlanStep;

/// `Respond::when` of the step that words the tool's result.
pub const POST: &str = "post";
pub const PRE: &str = "pre";

pub struct Planner<'a> {
    pub model: &'a ModelAccess,
}

impl Planner<'_> {
    /// The next steps of `intent` with `params` collected: one `AskUser`, or the call with
    /// what is said around it. `unreadable` are values this message gave that could not be
    /// read as their parameter's type.
    pub async fn plan(
        &self,
        intent: &Intent,
        params: &BTreeMap<String, Value>,
        unreadable: &[(String, Unreadable)],
        member_text: &str,
    ) -> Result<Vec<PlanStep>, AskError> {
        let told_back = unreadable.iter().find_map(|(name, problem)| {
            let spec = intent.param(name)?;
            (!params.contains_key(name)).then(|| (name, problem.ask_again(spec)))
        });
        if let Some((param, prompt)) = told_back {
            return Ok(vec![PlanStep::AskUser {
                param: param.clone(),
                prompt,
            }]);
        }
        if let Some(missing) = intent
            .param_names()
            .find(|name| !params.contains_key(*name))
        {
            let prompt = self.question(intent, missing, member_text).await?;
            return Ok(vec![PlanStep::AskUser {
                param: missing.to_string(),
                prompt,
            }]);
        }
        let mut steps = Vec::new();
        if let Some(pre) = &intent.respond.pre {
            steps.push(PlanStep::Respond {
                when: PRE.to_string(),
                message: render(pre, params, None, None),
            });
        }
        steps.push(PlanStep::ToolCall {
            tool_name: intent.tool.clone(),
            params: params.clone(),
        });
        steps.push(PlanStep::Respond {
            when: POST.to_string(),
            // Worded once the result is known.
            message: String::new(),
        });
        Ok(steps)
    }

    /// One short question for `param`, from the model; a plain one if it gives nothing.
    async fn question(
        &self,
        intent: &Intent,
        param: &str,
        member_text: &str,
    ) -> Result<String, AskError> {
        let messages = vec![
            ChatMessage::system(format!(
                "You help a family assistant collect what it needs to {}. Write one short, \
                 friendly question asking the family member for their {}. Answer with the \
                 question only.",
                intent.description.trim_end_matches('.').to_lowercase(),
                param.replace('_', " ")
            )),
            ChatMessage::user(member_text),
        ];
        let question = self.model.ask(messages, None).await?;
        let question = question.trim();
        Ok(if question.is_empty() {
            format!("What is the {}?", param.replace('_', " "))
        } else {
            question.to_string()
        })
    }

    /// The member's answer in words when the intent has no `post` template.
    pub async fn word_result(
        &self,
        intent: &Intent,
        params: &BTreeMap<String, Value>,
        result: &str,
    ) -> Result<String, AskError> {
        let params: Vec<String> = params
            .iter()
            .map(|(name, value)| format!("{name} = {}", shown(value)))
            .collect();
        let messages = vec![
            ChatMessage::system(
                "Tell the family member the result of their request in one or two short, \
                 friendly sentences. Use only the facts in the result.",
            ),
            ChatMessage::user(format!(
                "Request: {}\nParameters: {}\nResult: {result}",
                intent.description,
                params.join(", ")
            )),
        ];
        self.model.ask(messages, None).await
    }
}

/// The `{name}` placeholders of a template, in order.
pub fn placeholders(template: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        if !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            found.push(name.to_string());
            rest = &after[end + 1..];
        } else {
            rest = after;
        }
    }
    found
}

/// A JSON value as text: a string as it is, anything else as JSON (`1000`, `12.5`).
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `template` with `{param}`, `{result.field}` (of a JSON result) and `{error}` filled in; a
/// value that is not there reads "unknown". A parameter reads as it was read (`1,000` as
/// `1000`), the value the tool got.
pub fn render(
    template: &str,
    params: &BTreeMap<String, Value>,
    result: Option<&Value>,
    error: Option<&str>,
) -> String {
    let mut text = template.to_string();
    for name in placeholders(template) {
        let value = if let Some(field) = name.strip_prefix("result.") {
            result
                .and_then(|result| {
                    field
                        .split('.')
                        .try_fold(result, |value, key| value.get(key))
                })
                .map(shown)
        } else if name == "error" {
            error.map(str::to_string)
        } else {
            params.get(&name).map(shown)
        };
        text = text.replace(
            &format!("{{{name}}}"),
            value.as_deref().unwrap_or("unknown"),
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn templates_fill_params_result_fields_and_errors() {
        let params = BTreeMap::from([
            ("order_id".to_string(), json!("O-1")),
            ("amount".to_string(), json!(1000)),
        ]);
        let result = json!({"status": "shipped", "carrier": {"name": "UPS"}, "amount": 2.5});
        assert_eq!(
            render(
                "{order_id} is {result.status} via {result.carrier.name} ({result.amount}), {result.eta}",
                &params,
                Some(&result),
                None
            ),
            "O-1 is shipped via UPS (2.5), unknown"
        );
        assert_eq!(
            render(
                "{order_id} ({amount}): {error} {not a placeholder}",
                &params,
                None,
                Some("gone")
            ),
            "O-1 (1000): gone {not a placeholder}"
        );
        assert_eq!(placeholders("{a} {b.c} {} {d"), ["a", "b.c"]);
    }
}
