//! How `confirm_tools` names the tools that ask the family member first, and how a call
//! is matched against those names. One spelling per kind of tool:
//!
//! | kind | spelling | example |
//! |---|---|---|
//! | local tool | its name | `profile_update` |
//! | MCP tool | `<server>__<tool>`, as the model sees it | `files__write_file` |
//! | every tool of one MCP server | `<server>__*` | `files__*` |
//! | plugin capability | `<plugin>.<capability>` | `buy.place_order` |
//! | every capability of one plugin | `<plugin>.*` | `buy.*` |
//!
//! A name with `__` is an MCP name (plugin ids cannot contain `__`), else one with `.` is a
//! plugin name, else a local tool. Validation refuses a name that can name nothing; at run
//! time the rules fail closed (see `tools::ConfirmingToolsProvider`, which matches each call's
//! `ApprovalSubject` against these names).

use super::mcp_names::{TOOL_NAME_SEPARATOR, namespaced_tool_name};

/// One entry of `confirm_tools`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalName {
    Local(String),
    McpTool { server: String, tool: String },
    McpServer(String),
    PluginCapability { plugin: String, capability: String },
    Plugin(String),
}

/// What a tool call is, in the terms `confirm_tools` speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalSubject {
    /// A local tool.
    Local(String),
    /// A name no provider offers: it asks, whatever `confirm_tools` says (and then fails).
    Unknown(String),
    /// An MCP tool, namespaced; `listed` is false while its server's tool list is not known
    /// (not listed yet, or changed and not listed again): such a call always asks.
    Mcp {
        name: String,
        server: String,
        listed: bool,
    },
    /// A plugin capability called through `tool` (`route_to_plugin`); `capability` is empty
    /// when the call names none and the plugin has several.
    Plugin {
        tool: String,
        plugin: String,
        capability: String,
    },
}

impl ApprovalName {
    /// Reads one entry of `confirm_tools`; the error says what is wrong with its spelling.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty name names no tool".to_owned());
        }
        if let Some((server, tool)) = text.split_once(TOOL_NAME_SEPARATOR) {
            if server.is_empty() || tool.is_empty() {
                return Err(format!(
                    "{text:?} is not an MCP tool name: write <server>__<tool> or <server>__*"
                ));
            }
            return Ok(if tool == "*" {
                ApprovalName::McpServer(server.to_owned())
            } else {
                ApprovalName::McpTool {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                }
            });
        }
        if let Some((plugin, capability)) = text.split_once('.') {
            if plugin.is_empty() || capability.is_empty() || capability.contains('.') {
                return Err(format!(
                    "{text:?} is not a plugin capability: write <plugin>.<capability> or <plugin>.*"
                ));
            }
            return Ok(if capability == "*" {
                ApprovalName::Plugin(plugin.to_owned())
            } else {
                ApprovalName::PluginCapability {
                    plugin: plugin.to_owned(),
                    capability: capability.to_owned(),
                }
            });
        }
        if text.contains('*') {
            return Err(format!(
                "{text:?}: a wildcard names every tool of one MCP server (<server>__*) or every \
                 capability of one plugin (<plugin>.*)"
            ));
        }
        Ok(ApprovalName::Local(text.to_owned()))
    }

    /// The MCP server this name is about, if it is an MCP name.
    pub fn mcp_server(&self) -> Option<&str> {
        match self {
            ApprovalName::McpTool { server, .. } | ApprovalName::McpServer(server) => Some(server),
            _ => None,
        }
    }

    /// The plugin this name is about, if it is a plugin name.
    pub fn plugin(&self) -> Option<&str> {
        match self {
            ApprovalName::PluginCapability { plugin, .. } | ApprovalName::Plugin(plugin) => {
                Some(plugin)
            }
            _ => None,
        }
    }

    /// Whether a call that is `subject` is named by this entry.
    pub fn matches(&self, subject: &ApprovalSubject) -> bool {
        match (self, subject) {
            (ApprovalName::Local(name), ApprovalSubject::Local(called)) => name == called,
            // `route_to_plugin` in confirm_tools makes every plugin call ask.
            (ApprovalName::Local(name), ApprovalSubject::Plugin { tool, .. }) => name == tool,
            // The server's own tool name or the one the model sees: both name the tool.
            (ApprovalName::McpTool { server, tool }, ApprovalSubject::Mcp { name, .. }) => {
                namespaced_tool_name(server, tool) == *name
            }
            (ApprovalName::McpServer(server), ApprovalSubject::Mcp { server: called, .. }) => {
                server == called
            }
            (
                ApprovalName::PluginCapability { plugin, capability },
                ApprovalSubject::Plugin {
                    plugin: called,
                    capability: called_capability,
                    ..
                },
            ) => plugin == called && capability == called_capability,
            (ApprovalName::Plugin(plugin), ApprovalSubject::Plugin { plugin: called, .. }) => {
                plugin == called
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for ApprovalName {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApprovalName::Local(name) => formatter.write_str(name),
            ApprovalName::McpTool { server, tool } => {
                write!(formatter, "{server}{TOOL_NAME_SEPARATOR}{tool}")
            }
            ApprovalName::McpServer(server) => write!(formatter, "{server}{TOOL_NAME_SEPARATOR}*"),
            ApprovalName::PluginCapability { plugin, capability } => {
                write!(formatter, "{plugin}.{capability}")
            }
            ApprovalName::Plugin(plugin) => write!(formatter, "{plugin}.*"),
        }
    }
}

/// What `hearth check-config` says asks in a profile: each entry of its `confirm_tools`,
/// with plugin wildcards spelled out as the capabilities they cover today
/// (`capabilities_of` gives a plugin's capability ids), plus the MCP rule that holds
/// whatever the entries say.
pub fn describe_asking_tools(
    confirm_tools: &[String],
    enabled_mcp_servers: &[String],
    capabilities_of: impl Fn(&str) -> Option<Vec<String>>,
) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in confirm_tools {
        let line = match ApprovalName::parse(entry) {
            Ok(ApprovalName::Plugin(plugin)) => match capabilities_of(&plugin) {
                Some(capabilities) => format!(
                    "{entry} (today: {})",
                    capabilities
                        .iter()
                        .map(|capability| format!("{plugin}.{capability}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => format!("{entry} (no such plugin)"),
            },
            Ok(ApprovalName::McpServer(server)) => {
                format!("{entry} (every tool of MCP server {server})")
            }
            Ok(_) => entry.clone(),
            Err(why) => format!("{entry} ({why})"),
        };
        lines.push(line);
    }
    for server in enabled_mcp_servers {
        lines.push(format!(
            "{server}__* while the server's tool list is not known (before it is listed, \
             after it changed, while disconnected)"
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp(name: &str, listed: bool) -> ApprovalSubject {
        ApprovalSubject::Mcp {
            name: name.into(),
            server: name.split_once("__").unwrap().0.into(),
            listed,
        }
    }

    fn plugin(plugin: &str, capability: &str) -> ApprovalSubject {
        ApprovalSubject::Plugin {
            tool: "route_to_plugin".into(),
            plugin: plugin.into(),
            capability: capability.into(),
        }
    }

    #[test]
    fn each_kind_has_one_spelling() {
        assert_eq!(
            ApprovalName::parse("profile_update"),
            Ok(ApprovalName::Local("profile_update".into()))
        );
        assert_eq!(
            ApprovalName::parse("files__write.file"),
            Ok(ApprovalName::McpTool {
                server: "files".into(),
                tool: "write.file".into()
            })
        );
        assert_eq!(
            ApprovalName::parse("files__*"),
            Ok(ApprovalName::McpServer("files".into()))
        );
        assert_eq!(
            ApprovalName::parse("buy.place_order"),
            Ok(ApprovalName::PluginCapability {
                plugin: "buy".into(),
                capability: "place_order".into()
            })
        );
        assert_eq!(
            ApprovalName::parse("buy.*"),
            Ok(ApprovalName::Plugin("buy".into()))
        );
        for bad in [
            "",
            "__x",
            "files__",
            ".x",
            "buy.",
            "buy.a.b",
            "*",
            "profile_*",
        ] {
            assert!(ApprovalName::parse(bad).is_err(), "{bad:?}");
        }
        for text in [
            "profile_update",
            "files__write",
            "files__*",
            "buy.place_order",
            "buy.*",
        ] {
            assert_eq!(ApprovalName::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn calls_match_their_names_and_wildcards_only() {
        let order = plugin("buy", "place_order");
        assert!(
            ApprovalName::parse("buy.place_order")
                .unwrap()
                .matches(&order)
        );
        assert!(ApprovalName::parse("buy.*").unwrap().matches(&order));
        assert!(
            ApprovalName::parse("route_to_plugin")
                .unwrap()
                .matches(&order)
        );
        assert!(!ApprovalName::parse("buy.cancel").unwrap().matches(&order));
        assert!(!ApprovalName::parse("shop.*").unwrap().matches(&order));

        let echo = mcp("everything__echo", true);
        assert!(
            ApprovalName::parse("everything__echo")
                .unwrap()
                .matches(&echo)
        );
        assert!(ApprovalName::parse("everything__*").unwrap().matches(&echo));
        assert!(
            !ApprovalName::parse("everything__ech")
                .unwrap()
                .matches(&echo)
        );
        assert!(!ApprovalName::parse("every__*").unwrap().matches(&echo));
        assert!(
            !ApprovalName::parse("everything__echo")
                .unwrap()
                .matches(&plugin("everything", "echo"))
        );
        // A tool whose own name the model cannot see as it is: either spelling names it.
        let renamed = mcp(&namespaced_tool_name("files", "read.file"), true);
        assert!(
            ApprovalName::parse("files__read.file")
                .unwrap()
                .matches(&renamed)
        );
        let ApprovalSubject::Mcp { name, .. } = &renamed else {
            unreachable!()
        };
        assert!(ApprovalName::parse(name).unwrap().matches(&renamed));

        let local = ApprovalSubject::Local("profile_update".into());
        assert!(
            ApprovalName::parse("profile_update")
                .unwrap()
                .matches(&local)
        );
        assert!(!ApprovalName::parse("profile_get").unwrap().matches(&local));
    }
}
