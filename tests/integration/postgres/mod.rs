//! hearth on PostgreSQL: the real binary, several workers on one database.

mod postgres_hearth;
mod postgres_leases;
mod postgres_membership;
mod postgres_memory;
mod postgres_questions;
mod postgres_telegram_workers;
mod postgres_workers;
