//! Rebuild when a migration is added: `sqlx::migrate!` embeds the files of
//! `migrations/sqlite` and `migrations/postgres` it finds when it is compiled, and cargo
//! alone would not see a new file in those folders.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
