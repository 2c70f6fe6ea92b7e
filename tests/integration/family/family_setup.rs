//! The real `hearth` binary with nobody in the family: `run` prints a code, the first person
//! to send it on Telegram (the fake Bot API) becomes a parent and invites another; then
//! `hearth family` lists them, changes one only with the database to itself, and keeps the
//! last parent.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::hearth_app::test_env;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::telegram::{TelegramServer, TgUser};
use crate::support::telegram_family::{TOKEN, bot_says, telegram_family};
use crate::support::telegram_family::{code_in, code_said};

fn family(config: &std::path::Path, args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(config)
        .arg("family")
        .args(args)
        .envs(test_env(&[("TEST_TELEGRAM_TOKEN", TOKEN)]))
        .output()
        .expect("hearth family runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[actix::test]
async fn set_up_makes_the_first_parent_and_the_command_line_changes_the_family() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    // Nobody in the configuration's family.
    let config = telegram_family(folder.path(), &llm, &telegram)
        .with(|config| config.family.clear())
        .write(folder.path());

    let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(&config)
        .arg("run")
        .envs(test_env(&[("TEST_TELEGRAM_TOKEN", TOKEN)]))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("hearth runs");
    let stdout = child.stdout.take().unwrap();
    let (sender, codes) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("/join ")
                && let Some(code) = code_in(&line)
            {
                let _ = sender.send(code);
            }
        }
    });
    let code = codes
        .recv_timeout(Duration::from_secs(60))
        .expect("set-up printed a code");

    let grace = TgUser::new(7007, "Grace");
    telegram.push_private_text(&grace, &format!("/join {code}"));
    bot_says(
        &telegram,
        7007,
        "Welcome to the family, Grace! You joined as a parent",
    )
    .await;
    telegram.push_private_text(&grace, "/invite child Max");
    let invite = code_said(&telegram, 7007, "Invite code for Max as a child").await;
    let max = TgUser::new(7008, "Max");
    telegram.push_private_text(&max, &format!("/join {invite}"));
    bot_says(&telegram, 7008, "You joined as a child").await;
    bot_says(&telegram, 7007, "Max joined the family as a child").await;

    // A change needs the database to itself; listing does not.
    let (changed, said) = family(&config, &["remove", "max"]);
    assert!(
        !changed && said.contains("stop hearth, or send /family in chat"),
        "{said}"
    );
    let (listed, said) = family(&config, &["list"]);
    assert!(listed, "{said}");
    assert!(
        said.contains("Grace (grace, parent): Telegram 7007"),
        "{said}"
    );
    assert!(said.contains("Max (max, child): Telegram 7008"), "{said}");

    child.kill().unwrap();
    child.wait().unwrap();
    let (changed, said) = family(&config, &["set-role", "Max", "parent"]);
    assert!(changed, "{said}");
    assert!(said.contains("max is now a parent"), "{said}");
    let (changed, said) = family(&config, &["set-role", "max", "boss"]);
    assert!(!changed && said.contains("\"boss\" is no role"), "{said}");
    let (changed, said) = family(&config, &["remove", "max"]);
    assert!(changed, "{said}");
    let (changed, said) = family(&config, &["remove", "grace"]);
    assert!(!changed && said.contains("last parent"), "{said}");
    let (_, said) = family(&config, &["list"]);
    assert!(!said.contains("Max"), "{said}");
}
