//! Roles a test makes for itself: a Postgres test that needs a role other
//! than the server's superuser (one that must give a password, one without
//! privileges) creates it on whatever server `CAIRNQ_TEST_PG_DSN` names,
//! rather than relying on roles a particular setup script made.

use super::dsn_with_user;

/// A login role with a random name and password, created for one test and
/// dropped (with whatever it owns or was granted in the database it was
/// created from) when the value is dropped.
///
/// ```no_run
/// # async fn demo(dsn: &str) {
/// let Ok(role) = cairnq_testkit::postgres::TestRole::create(dsn).await else { return };
/// let as_role = role.dsn(dsn); // connect as the role, with its password
/// # }
/// ```
#[derive(Debug)]
pub struct TestRole {
    name: String,
    password: String,
    admin_dsn: String,
}

impl TestRole {
    /// Creates the role through `admin_dsn` (its user needs `CREATEROLE`).
    /// `Err` says why it cannot: print it and skip the test.
    pub async fn create(admin_dsn: &str) -> Result<Self, String> {
        let (client, connection) = tokio_postgres::connect(admin_dsn, tokio_postgres::NoTls)
            .await
            .map_err(|e| format!("cannot connect to {admin_dsn}: {e}"))?;
        tokio::spawn(connection);
        let (name, password) = (format!("cairnq_t_{}", random()), random());
        // scram-sha-256 whatever the server's default (13 still hashes with
        // md5, which a scram-sha-256 pg_hba.conf line refuses).
        let create =
            format!("set password_encryption = 'scram-sha-256'; create role {name} login password '{password}'");
        client
            .batch_execute(&create)
            .await
            .map_err(|e| format!("the user of {admin_dsn} cannot create a role: {e}"))?;
        Ok(Self { name, password, admin_dsn: admin_dsn.into() })
    }

    /// The role's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `dsn` (any database of the server) as this role, with its password.
    pub fn dsn(&self, dsn: &str) -> String {
        self.dsn_with_password(dsn, &self.password)
    }

    /// `dsn` as this role with another password.
    pub fn dsn_with_password(&self, dsn: &str, password: &str) -> String {
        dsn_with_user(dsn, &format!("{}:{password}", self.name))
    }

    /// Whether the server refuses this role a wrong password on `dsn`. A
    /// server whose pg_hba.conf trusts the connection lets any password in,
    /// so a test of the refusal must skip there.
    pub async fn password_is_checked(&self, dsn: &str) -> bool {
        let wrong = self.dsn_with_password(dsn, "not-the-password");
        match tokio_postgres::connect(&wrong, tokio_postgres::NoTls).await {
            Ok(_) => false,
            Err(e) => e.code() == Some(&tokio_postgres::error::SqlState::INVALID_PASSWORD),
        }
    }
}

impl Drop for TestRole {
    fn drop(&mut self) {
        let (admin_dsn, name) = (self.admin_dsn.clone(), self.name.clone());
        let statement = format!("drop owned by {name}; drop role {name}");
        // A thread and a runtime of its own: Drop runs inside async tests,
        // where blocking on their runtime would deadlock.
        let dropped = std::thread::spawn(move || -> Result<(), String> {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let (client, connection) =
                    tokio_postgres::connect(&admin_dsn, tokio_postgres::NoTls).await.map_err(|e| e.to_string())?;
                tokio::spawn(connection);
                client.batch_execute(&statement).await.map_err(|e| e.to_string())
            })
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("warning: the test role {} was not dropped: {e}", self.name),
            Err(_) => eprintln!("warning: dropping the test role {} panicked", self.name),
        }
    }
}

/// Ten random lowercase letters and digits (a role name may not be upper
/// case unquoted).
fn random() -> String {
    let id = cairnq_core::backend::new_task_id().to_lowercase();
    id[id.len() - 10..].to_string()
}
