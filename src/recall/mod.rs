//! Recall: what the family told hearth, found again. This module owns the rules that are
//! neither storage nor an actor: how a text is cut into chunks (`chunks`), and how the
//! full-text and vector rankings of one search are made one (`fusion`).
//!
//! What a member may find is the port's to enforce (`ports::FamilyMemory`): every row
//! carries who may read it and every query asks as the member.

pub mod chunks;
pub mod fusion;
