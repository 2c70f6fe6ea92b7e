//! A profile's tools: the stack, MCP servers, plugins, delegation.

mod delegation;
mod mcp_elicitation;
mod mcp_pipeline;
mod mcp_tools;
mod plugin_examples;
mod plugin_kinds;
mod plugins;
mod tools_stack;
