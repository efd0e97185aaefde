//! The access token as the server holds it, and the login session derived
//! from it.
//!
//! A browser that logged in holds a cookie; if that cookie held the token
//! itself, anything that reads cookies (a shared profile, a proxy log, a
//! copied header) would read the token, and the token would outlive the
//! dashboard. The cookie holds HMAC-SHA256 of the token under a key drawn
//! at random when the dashboard starts instead: it says "this browser
//! logged in here", proves nothing elsewhere, cannot be turned back into
//! the token, and dies with the process (a restarted dashboard asks for the
//! token again). A sent token is compared the same way, as a MAC of fixed
//! length, so neither comparison takes a time that depends on the secret.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::options::WebError;

type HmacSha256 = Hmac<Sha256>;

/// What a MAC is computed over, so a cookie is never a token's MAC.
const TOKEN_PURPOSE: &[u8] = b"cairnq-web token\0";
const SESSION_PURPOSE: &[u8] = b"cairnq-web session\0";

/// The token's check and the session cookie's value, for one dashboard.
pub(crate) struct Session {
    /// Drawn from the OS when the dashboard starts; never leaves the process.
    key: [u8; 32],
    /// The MAC of the token (what a sent token's MAC must equal).
    token_mac: [u8; 32],
    /// The login cookie's value: the session MAC, hex.
    cookie: String,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Session(<secret>)")
    }
}

impl Session {
    /// A session for `token` under a fresh random key.
    pub(crate) fn new(token: &str) -> Result<Self, WebError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|error| WebError::Random(error.to_string()))?;
        let token_mac = mac(&key, TOKEN_PURPOSE, token.as_bytes());
        let cookie = hex(&mac(&key, SESSION_PURPOSE, token.as_bytes()));
        Ok(Self { key, token_mac, cookie })
    }

    /// Whether `sent` is the token.
    pub(crate) fn is_token(&self, sent: &str) -> bool {
        same(&mac(&self.key, TOKEN_PURPOSE, sent.as_bytes()), &self.token_mac)
    }

    /// Whether `sent` is this dashboard's session cookie value.
    pub(crate) fn is_session(&self, sent: &str) -> bool {
        same(sent.as_bytes(), self.cookie.as_bytes())
    }

    /// The value the login cookie is set to.
    pub(crate) fn cookie(&self) -> &str {
        &self.cookie
    }
}

fn mac(key: &[u8; 32], purpose: &[u8], message: &[u8]) -> [u8; 32] {
    // HMAC takes a key of any length, so this never fails.
    let Ok(mut mac) = <HmacSha256 as KeyInit>::new_from_slice(key) else { return [0; 32] };
    mac.update(purpose);
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// Compares in a time that depends only on the lengths (public here: a MAC,
/// or the hex of one), so a wrong guess does not tell how much was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_neither_the_token_nor_the_same_twice_and_only_the_token_passes() {
        let token = "correct-horse-battery-staple";
        let one = Session::new(token).expect("a key");
        let two = Session::new(token).expect("a key");
        assert!(!one.cookie().contains(token) && one.cookie().len() == 64);
        assert_ne!(one.cookie(), two.cookie(), "a key of its own per dashboard");
        assert!(one.is_token(token) && !one.is_token("correct-horse-battery-stapl") && !one.is_token(""));
        assert!(one.is_session(one.cookie()) && !one.is_session(two.cookie()) && !one.is_session(token));
    }
}
