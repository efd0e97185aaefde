//! [`StepMemo`]: what one attempt remembers about its durable steps
//! (`TaskContext::step`), kept apart from the step logic so the context
//! holds it without the two modules naming each other.

use std::collections::HashMap;

use cairnq_core::Step;
use parking_lot::Mutex;
use tokio::sync::OnceCell;

/// One attempt's step bookkeeping: how often each name was used (so the
/// `n`-th use of a name gets its own row), and the steps stored before,
/// read once at the attempt's first step.
#[derive(Debug, Default)]
pub(crate) struct StepMemo {
    uses: Mutex<HashMap<String, u32>>,
    stored: OnceCell<HashMap<String, Step>>,
}

impl StepMemo {
    /// The stored name of this use of `name`: `name`, then `name#2`, ...
    pub(crate) fn next_name(&self, name: &str) -> String {
        let mut uses = self.uses.lock();
        let nth = uses.entry(name.to_string()).or_insert(0);
        *nth += 1;
        Step::numbered(name, *nth)
    }

    /// The steps stored before this attempt, once read.
    pub(crate) fn stored(&self) -> &OnceCell<HashMap<String, Step>> {
        &self.stored
    }
}
