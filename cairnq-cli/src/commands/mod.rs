//! One module per subcommand, each with its clap `Args` and a `run` that
//! returns the exit code; what they share (the database, the output) is
//! the [`Context`].

pub(crate) mod bulk;
pub(crate) mod confirm;
pub(crate) mod doctor;
pub(crate) mod filter;
pub(crate) mod flow;
pub(crate) mod limit;
pub(crate) mod migrate;
pub(crate) mod purge;
pub(crate) mod read;
pub(crate) mod schedule;
pub(crate) mod stats;
pub(crate) mod submit;
pub(crate) mod top;
pub(crate) mod wait;
pub(crate) mod web;
pub(crate) mod worker;

use cairnq_core::{CairnQ, Install, Json};

use crate::db::{PgConnect, Target};
use crate::exit::Failure;
use crate::output::Output;

/// What every command gets: where the database is, how to write.
pub(crate) struct Context {
    pub(crate) db: Option<String>,
    pub(crate) schema: Option<String>,
    /// `--pooler`, `--listen-url`, and the name the connections report.
    pub(crate) connect: PgConnect,
    pub(crate) out: Output,
}

impl Context {
    /// The database named by `--db` / `CAIRNQ_DB`, `--schema`, `--pooler`
    /// and `--listen-url`.
    pub(crate) fn target(&self) -> Result<Target, Failure> {
        Target::parse(self.db.as_deref(), self.schema.as_deref(), &self.connect)
    }

    /// A client on an existing installation: never creates or migrates.
    pub(crate) async fn existing(&self) -> Result<CairnQ, Failure> {
        self.target()?.open(Install::Existing).await
    }

    /// A client on an existing installation for a read that sums up the
    /// queue (`stats`, `list`): a SQLite file found damaged is refused
    /// rather than answered from the pages still readable.
    pub(crate) async fn existing_checked(&self) -> Result<CairnQ, Failure> {
        let target = self.target()?;
        let client = target.open(Install::Existing).await?;
        target.refuse_damaged().await?;
        Ok(client)
    }

    /// A client that may create and migrate the database (submit, worker).
    pub(crate) async fn installing(&self) -> Result<CairnQ, Failure> {
        self.target()?.open(Install::Migrate).await
    }
}

/// A JSON argument (`--payload`, `--metadata`), checked before anything
/// is opened.
pub(crate) fn json_arg(flag: &str, text: String) -> Result<Json, Failure> {
    // `e` reads "not valid JSON: <why>": said once.
    Json::parse(text.trim().to_string()).map_err(|e| Failure::usage(format!("{flag} is {e}")))
}
