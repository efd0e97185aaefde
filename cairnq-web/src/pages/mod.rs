//! The dashboard's HTML pages, one module each, and the form actions they
//! post to.

pub(crate) mod bulk;
pub(crate) mod detail;
pub(crate) mod flow;
pub(crate) mod limits;
pub(crate) mod overview;
pub(crate) mod schedules;
pub(crate) mod steps;
pub(crate) mod tasks;
pub(crate) mod workers;
