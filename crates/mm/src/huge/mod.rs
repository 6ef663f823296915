//! Huge-page mechanisms.

pub(crate) mod collapse;
pub(crate) mod dedup;
pub(crate) mod reserv;
pub(crate) mod split;
