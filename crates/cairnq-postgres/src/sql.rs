//! Arguments by parameter name, for protocol statements.
//!
//! cairnq-protocol renders every statement for every combination of its
//! `-- when:` flags at build time, with `$n` placeholders and the name
//! behind each; this module binds named arguments in that order.

use cairnq_core::{Error, Result};
use tokio_postgres::types::ToSql;

/// A value bound to a named parameter.
pub(crate) type Arg = Box<dyn ToSql + Sync + Send>;

/// Arguments by parameter name.
#[derive(Default)]
pub(crate) struct Args {
    values: Vec<(&'static str, Arg)>,
}

impl Args {
    /// No arguments.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// With `name` bound to `value`.
    pub(crate) fn set(mut self, name: &'static str, value: impl ToSql + Sync + Send + 'static) -> Self {
        self.values.push((name, Box::new(value)));
        self
    }

    /// The values in the order `statement` needs them.
    pub(crate) fn ordered(&self, statement: &str, names: &[&str]) -> Result<Vec<&(dyn ToSql + Sync)>> {
        names
            .iter()
            .map(|name| {
                let found = self.values.iter().find(|(n, _)| n == name);
                found.map(|(_, v)| v.as_ref() as &(dyn ToSql + Sync)).ok_or_else(|| Error::Storage {
                    message: format!("statement {statement} needs :{name}, which was not bound"),
                    source: None,
                    transient: false,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_an_unbound_parameter() {
        let args = Args::new().set("a", 1i64);
        assert!(args.ordered("s", &["a"]).is_ok());
        assert!(args.ordered("s", &["b"]).is_err());
    }
}
