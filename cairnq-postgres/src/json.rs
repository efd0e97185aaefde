//! Task JSON on the wire, verbatim: [`Json`] bound to and read from `jsonb`
//! columns as text, never through `serde_json::Value` (which would turn an
//! integer beyond 64 bits into a float and re-round floats).
//!
//! Postgres itself keeps `jsonb` numbers as `numeric`, so every digit
//! survives; only what `numeric` cannot hold is lost (it has no negative
//! zero: `-0.0` reads back as `0.0`), and the text comes back in jsonb's
//! normal form (keys reordered, whitespace dropped), equal by value.

use std::error::Error as StdError;

use bytes::BytesMut;
use cairnq_core::Json;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

/// The jsonb binary format's only version: one byte before the text.
const JSONB_VERSION: u8 = 1;

/// A [`Json`] bound to a `json` / `jsonb` parameter as its text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JsonText<'a>(pub(crate) &'a Json);

impl ToSql for JsonText<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        if *ty == Type::JSONB {
            out.extend_from_slice(&[JSONB_VERSION]);
        }
        out.extend_from_slice(self.0.as_str().as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::JSON | Type::JSONB)
    }

    to_sql_checked!();
}

/// A [`Json`] read from a `json` / `jsonb` column (or text holding JSON).
#[derive(Debug, Clone)]
pub(crate) struct PgJson(pub(crate) Json);

impl<'a> FromSql<'a> for PgJson {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        let text = match (ty, raw.split_first()) {
            (&Type::JSONB, Some((&JSONB_VERSION, text))) => text,
            (&Type::JSONB, _) => return Err("unknown jsonb binary format version".into()),
            _ => raw,
        };
        let text = std::str::from_utf8(text)?.to_string();
        Ok(Self(Json::parse(text)?))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::JSON | Type::JSONB | Type::TEXT | Type::VARCHAR)
    }
}
