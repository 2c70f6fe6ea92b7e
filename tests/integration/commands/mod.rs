//! `hearth`'s commands and process: the CLI (`chat`, `check-config`, `migrate`), `doctor`, one
//! hearth per database, a restart answering what was accepted.

mod cli;
mod doctor;
mod one_hearth;
mod restart;
