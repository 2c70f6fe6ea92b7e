//! Which optional parts this binary was built with (Cargo features `telegram`, `matrix`,
//! `mcp`, all in the default build), and the refusal of config that needs a missing one: it
//! is found at start-up and by `hearth check-config`, not at run time.

use super::error::Problems;
use super::types::HearthConfig;

/// One problem per part the config needs and this binary lacks, at the key that asks for it.
pub(crate) fn check_built_parts(config: &HearthConfig, problems: &mut Problems) {
    let rebuild = |feature: &str| {
        format!(
            "this hearth was built without {feature}: build it with `--features {feature}` \
             (part of the default build), or turn this off"
        )
    };
    if config.channels.telegram.enabled && !cfg!(feature = "telegram") {
        problems.push("channels.telegram.enabled", rebuild("telegram"));
    }
    if config.channels.matrix.enabled && !cfg!(feature = "matrix") {
        problems.push("channels.matrix.enabled", rebuild("matrix"));
    }
    if !config.mcp_servers.is_empty() && !cfg!(feature = "mcp") {
        problems.push("mcp_servers", rebuild("mcp"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_needing_a_part_not_built_is_refused_and_one_built_passes() {
        let config: HearthConfig = serde_yaml::from_str(
            "channels:\n  telegram: {enabled: true}\n  matrix: {enabled: true}\n\
             mcp_servers:\n  files: {command: server}\n",
        )
        .expect("config");
        let mut problems = Problems::default();
        check_built_parts(&config, &mut problems);
        let key_paths: Vec<String> = problems
            .into_vec()
            .into_iter()
            .map(|problem| problem.key_path)
            .collect();
        for (key_path, built) in [
            ("channels.telegram.enabled", cfg!(feature = "telegram")),
            ("channels.matrix.enabled", cfg!(feature = "matrix")),
            ("mcp_servers", cfg!(feature = "mcp")),
        ] {
            assert_eq!(
                key_paths.contains(&key_path.to_string()),
                !built,
                "{key_path} in {key_paths:?}"
            );
        }

        let mut problems = Problems::default();
        check_built_parts(&HearthConfig::default(), &mut problems);
        assert!(problems.is_empty(), "nothing optional is asked for");
    }
}
