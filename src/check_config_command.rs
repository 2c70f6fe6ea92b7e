//! `hearth check-config`: the resolved profiles, the plugins, the intents, the family
//! scripts, the voice notes' transcription, memory's embedding model, the reminder settings,
//! which tool calls ask the member first, and what each credential of the HTTP server may
//! do, printed from a configuration that loaded. The database is only read, when it exists.

use std::path::Path;

use hearth::config::{self, LoadedConfig};

use crate::existing_database;

/// The reminder settings and each member's zone, when a profile enables a reminder tool.
fn print_reminder_settings(loaded: &LoadedConfig) {
    let profiles: Vec<&str> = loaded
        .profiles
        .iter()
        .filter(|profile| {
            profile
                .tools
                .enable_local_tools
                .iter()
                .any(|tool| hearth::reminders::REMINDER_TOOL_NAMES.contains(&tool.as_str()))
        })
        .map(|profile| profile.id.as_str())
        .collect();
    if profiles.is_empty() {
        return;
    }
    let reminders = &loaded.config.reminders;
    println!(
        "reminders (profiles {}): sent late within {} min of their time, else told as missed; snooze {} min; at most {} per member",
        profiles.join(", "),
        reminders.grace_minutes,
        reminders.snooze_minutes,
        reminders.max_per_member
    );
    for member in &loaded.config.family {
        let zone = member
            .timezone
            .as_deref()
            .unwrap_or("the profile's timezone");
        println!("  {}: {zone}", member.id);
    }
}

/// `hearth check-config`: the resolved profiles, the plugins, and per profile which tool
/// calls ask the member first. The plugins folder is part of the configuration: its files
/// are checked too, and so are `confirm_tools` entries naming plugins (against the folder and
/// the plugins registered in the database, when it exists).
pub(crate) async fn check_config(loaded: LoadedConfig) -> anyhow::Result<()> {
    print!("{}", config::render_resolved_profiles(&loaded));
    let catalog = hearth::plugins::PluginCatalog::from_config_off_the_runtime(&loaded.config)
        .await
        .map_err(|error| anyhow::anyhow!("plugins cannot be loaded:\n{error}"))?;
    // A PostgreSQL server that is down does not make the configuration wrong: the plugins
    // registered in it are left out, said so.
    let existing = match existing_database(&loaded).await {
        Err(error) if hearth::storage::is_postgres_url(&loaded.config.database_url) => {
            eprintln!("registered plugins not listed: {error:#}");
            None
        }
        other => other?,
    };
    if let Some(stores) = existing {
        hearth::plugins::restore_registered(&catalog, stores.registered_plugins.as_ref()).await;
    }
    println!("plugins: {}", catalog.plugin_ids().join(", "));
    match loaded.config.transcription_llm() {
        Some((name, llm)) => println!(
            "voice notes: transcribed by llms.{name} ({}), at most {} s each",
            llm.model, loaded.config.voice_notes.max_duration_seconds
        ),
        None => println!("voice notes: not transcribed (no llms entry has kind: transcription)"),
    }
    match loaded.config.embedding_llm() {
        Some((name, llm)) => println!("memory: embedded by llms.{name} ({})", llm.model),
        None => println!("memory: no embedding model (memory.embedding_model is not set)"),
    }
    for profile in &loaded.profiles {
        if profile.processing.engine == config::Engine::Intents {
            let file = Path::new(&profile.processing.intents_file);
            let registry = hearth::intents::IntentsRegistry::load(file)
                .await
                .map_err(|error| anyhow::anyhow!("intents cannot be loaded:\n{error}"))?;
            let ids: Vec<&str> = registry.intents.iter().map(|i| i.id.as_str()).collect();
            println!("intents of {}: {}", profile.id, ids.join(", "));
        }
    }
    catalog.check_approval_names(&loaded)?;
    if let Some(scripts) = hearth::scripts::load_if_used(&loaded)
        .await
        .map_err(|error| anyhow::anyhow!("family scripts cannot be loaded:\n{error}"))?
    {
        println!("family scripts: {}", scripts.names().join(", "));
    }
    print_reminder_settings(&loaded);
    println!("confirmation (tool calls that ask the member first):");
    for profile in &loaded.profiles {
        let mut asking = hearth::config::describe_asking_tools(
            &profile.tools.confirm_tools,
            &profile.tools.enable_mcp_server_ids,
            |id| catalog.capability_ids(id),
        );
        if profile
            .tools
            .enable_local_tools
            .iter()
            .any(|tool| tool == hearth::scripts::RUN_SCRIPT)
        {
            asking.retain(|line| line != hearth::scripts::RUN_SCRIPT);
            asking.push(format!(
                "{}: every run of a family script, always",
                hearth::scripts::RUN_SCRIPT
            ));
        }
        if asking.is_empty() {
            println!("  {}: none", profile.id);
        } else {
            println!("  {}:", profile.id);
            for line in asking {
                println!("    - {line}");
            }
        }
    }
    print_credentials(&loaded);
    Ok(())
}

/// What each credential of the HTTP server may do.
fn print_credentials(loaded: &LoadedConfig) {
    let http = &loaded.config.http;
    if !http.enabled {
        println!("http: off (no web page, no API)");
        return;
    }
    println!("credentials (http on {}):", http.bind);
    if !http.auth_enabled {
        println!(
            "  - http.auth_enabled is false: every API route is open to whoever reaches {}, as any member; the web page still signs each member in",
            http.bind
        );
    }
    let named = |variable: &Option<String>| {
        variable
            .as_deref()
            .map_or("unset: closed".to_string(), |variable| {
                format!("${variable}")
            })
    };
    println!(
        "  - the inbound key ({}): submits messages and reads replies as any member; answers no confirmation",
        named(&http.auth_api_key_env)
    );
    println!(
        "  - a member's token (hearth token create --user NAME): the inbound routes as that member only, their confirmations included"
    );
    println!(
        "  - the web page: each member signed in with a code sent to their own chat, or a link of hearth web-link; sessions last {} days",
        http.session_days
    );
    println!(
        "  - the plugin key ({}): the plugin LLM API",
        named(&http.plugin_api_key_env)
    );
    println!(
        "  - the admin key ({}): registering plugins; /metrics and /readyz details when metrics_auth",
        named(&http.admin_api_key_env)
    );
}
