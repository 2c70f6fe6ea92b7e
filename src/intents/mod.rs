//! The intents engine (seed 003), a second engine a service profile can choose
//! (`processing_config.engine: intents`): a predictable, auditable path for the requests that
//! matter, next to the free-form tool loop. It runs on the profile's `ProcessingService`, with
//! the profile's tools stack, queue, confirmations and channels.
//!
//! - `registry.rs`: `intents.yaml` typed and checked, eligible intents (channel, rollout, role);
//! - `params.rs`: each parameter's declared type, and its value read once into it;
//!   `written.rs`: numbers and dates as members write them, read without guessing;
//!   `unreadable.rs`: a value that could not be read, told back to the member in words;
//! - `classifier.rs`: the IntentClassifier (one LLM call, JSON);
//! - `planner.rs`: the Planner (AskUser, or Respond(pre) → ToolCall → Respond(post)) and templates;
//! - `policy.rs`: the PolicyEngine (structured rules, or allow-all);
//! - `executor.rs`: the ToolExecutor, running a stored plan step by step;
//! - `engine.rs`: the pipeline of one interaction, and continuing a waiting plan;
//! - `telemetry.rs`: the ten stages, redaction;
//! - `data_source.rs`: the DataSource port and its JSON adapter; `order_tool.rs`:
//!   `check_order_status`;
//! - `llm.rs`: the engine's requests to the `LlmBroker`.

mod classifier;
mod data_source;
mod engine;
mod executor;
mod llm;
mod order_tool;
mod params;
mod planner;
mod policy;
mod registry;
mod telemetry;
mod unreadable;
mod written;

pub use classifier::Classification;
pub use data_source::{DataSource, DataSourceError, JsonDataSource, ORDERS, RecordsDataSource};
pub use engine::{
    CANCELLED_REPLY, IntentsDeps, IntentsEngine, NOT_SURE_REPLY, SOMETHING_WRONG_REPLY,
};
pub use executor::{INTERRUPTED_REPLY, PARENT_DECLINED_REPLY, PARENT_EXPIRED_REPLY};
pub use order_tool::{CHECK_ORDER_STATUS, OrderStatusTool};
pub use params::{ParamSpec, ParamType, ParamValue, read_params};
pub use planner::{placeholders, render};
pub use policy::{
    NullPolicyEngine, PolicyDecision, PolicyEngine, PolicyRequest, PolicyRule, RulePolicyEngine,
};
pub use registry::{
    DataSourceConfig, DataSourceKind, Intent, IntentContext, IntentsFileError, IntentsRegistry,
    in_rollout,
};
pub use telemetry::{REDACTED, STAGES};
pub use unreadable::{Problem, Unreadable};
pub use written::{DateProblem, NumberProblem, read_date, read_number};
