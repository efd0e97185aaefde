//! A task's durable steps on its page: each step's name, the attempt that
//! stored it, when, and its value (shortened) or the error it failed with
//! for good. Every value is interpolated by maud, so escaped.

use cairnq_core::Step;
use maud::{Markup, html};

use crate::html::when;

/// The characters of a step's value shown in its cell (the whole value is
/// its cell's title).
const VALUE_SHOWN: usize = 120;

/// The "Steps" section (nothing for a task without steps).
pub(crate) fn section(steps: &[Step], now_ms: i64) -> Markup {
    html! {
        @if !steps.is_empty() {
            h2 { "Steps" }
            table #steps {
                thead { tr { th { "Step" } th.num { "Attempt" } th { "Stored" } th { "Value" } } }
                tbody {
                    @for step in steps {
                        tr data-step=(step.name) {
                            td { code { (step.name) } }
                            td.num { (step.attempt) }
                            td { (when(Some(step.created_at_ms), now_ms)) }
                            (value_cell(step))
                        }
                    }
                }
            }
        }
    }
}

fn value_cell(step: &Step) -> Markup {
    match (&step.error, &step.result) {
        (Some(error), _) => {
            let text = format!("{}: {}", error.code, error.message);
            html! { td.error title=(text) { (short(&text)) } }
        }
        (None, Some(result)) => html! { td title=(result.as_str()) { code { (short(result.as_str())) } } },
        (None, None) => html! { td.muted { "—" } },
    }
}

/// At most [`VALUE_SHOWN`] characters, an ellipsis marking a cut.
fn short(text: &str) -> String {
    match text.char_indices().nth(VALUE_SHOWN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
