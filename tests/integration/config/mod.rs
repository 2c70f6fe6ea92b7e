//! Loading `hearth.yaml` (`config_loading/`), and the Compose example's configuration.

mod compose_config;
mod config_loading;
