//! The family: membership, set-up, invites and codes on each platform, family scripts.

mod codes_private;
mod family_membership;
mod family_scripts;
mod family_scripts_examples;
mod family_scripts_running;
mod family_scripts_telegram;
mod family_setup;
mod invites_matrix;
mod invites_telegram;
