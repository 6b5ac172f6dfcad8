//! `deploy` and `confirm`: tools that ask the user "are you sure?" first.
//!
//! * `deploy {service, environment}` deploys at once, except to
//!   `production`, which first needs the user's confirmation.
//! * `confirm {action}` asks for a confirmation until it gets one: the
//!   smallest multi-round tool (the benchmark peers serve the same).
//!
//! Both ask with a one-field form under the key `confirm`:
//! `{"ok": boolean}`. Only an accepted form with `ok: true` confirms. For
//! `deploy`, declining, cancelling or `ok: false` refuse the deployment; for
//! `confirm` they mean "not yet", so it asks again. See README.md.

use airlock_guest::{Call, Error, InputRequired, Outcome, RoutedTools, Tool, ToolRouter, json};
use serde::Deserialize;

struct Deploy;

impl RoutedTools for Deploy {
    fn router() -> ToolRouter {
        ToolRouter::new()
            .tool("deploy", deploy, |name| {
                Tool::new(
                    name,
                    "Deploys a service to an environment. Deploying to production \
                     asks the user to confirm first.",
                )
                .title("Deploy")
                .input_schema(json!({
                    "type": "object",
                    "properties": {
                        "service": {
                            "type": "string",
                            "description": "The service to deploy, e.g. `billing`."
                        },
                        "environment": {
                            "type": "string",
                            "description": "Where to deploy, e.g. `staging` or `production`."
                        }
                    },
                    "required": ["service", "environment"]
                }))
                .destructive(true)
            })
            .tool("confirm", confirm, |name| {
                Tool::new(
                    name,
                    "Asks the user to confirm an action, again until they do, then reports it confirmed.",
                )
                .title("Confirm")
                .input_schema(json!({
                    "type": "object",
                    "properties": {
                        "action": {
                            "type": "string",
                            "description": "The action to confirm, as the user will read it."
                        }
                    },
                    "required": ["action"]
                }))
                .read_only()
            })
    }
}

airlock_guest::export!(Deploy);

#[derive(Deserialize)]
struct DeployArgs {
    service: String,
    environment: String,
}

fn deploy(
    DeployArgs {
        service,
        environment,
    }: DeployArgs,
    call: &Call,
) -> Result<Outcome, Error> {
    if environment == "production" {
        match confirmation(call) {
            Answer::Missing => {
                return Ok(ask(format!("Deploy {service} to production?")));
            }
            Answer::Refused => {
                return Err(Error::new(format!(
                    "Deployment of {service} to production was not confirmed; nothing was deployed."
                )));
            }
            Answer::Confirmed => {}
        }
    }
    // A real tool would start the deployment here.
    Ok(Outcome::text(format!(
        "Deployed {service} to {environment}"
    )))
}

#[derive(Deserialize)]
struct ConfirmArgs {
    action: String,
}

fn confirm(ConfirmArgs { action }: ConfirmArgs, call: &Call) -> Outcome {
    match confirmation(call) {
        Answer::Confirmed => Outcome::text(format!("confirmed {action}")),
        Answer::Missing | Answer::Refused => ask(format!("Confirm {action}?")),
    }
}

/// Where the confirmation stands in this round.
enum Answer {
    /// Not asked yet (or the client did not answer): ask.
    Missing,
    /// Accepted with `ok: true`.
    Confirmed,
    /// Declined, cancelled, or accepted with anything but `ok: true`.
    Refused,
}

/// The confirmation form's values.
#[derive(Deserialize)]
struct Confirmation {
    ok: bool,
}

fn confirmation(call: &Call) -> Answer {
    match call.elicitation("confirm") {
        None => Answer::Missing,
        Some(answer) => match answer.accepted_content::<Confirmation>() {
            Some(Confirmation { ok: true }) => Answer::Confirmed,
            _ => Answer::Refused,
        },
    }
}

/// Asks for a confirmation with `message`. Nothing needs to be remembered:
/// the retry carries the same arguments, so no state is returned.
fn ask(message: String) -> Outcome {
    InputRequired::new()
        .elicit_form(
            "confirm",
            message,
            json!({
                "type": "object",
                "properties": { "ok": { "type": "boolean" } },
                "required": ["ok"]
            }),
        )
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_guest::{ElicitationResponse, Tools};

    fn answered(call: &Call, answer: ElicitationResponse) -> Outcome {
        let asked = Deploy::call(call.clone());
        let asked = asked.input_required().expect("a question");
        Deploy::call(call.retry(asked, [("confirm", answer.into())]))
    }

    #[test]
    fn staging_deploys_at_once() {
        let call = Call::new("deploy", r#"{"service":"api","environment":"staging"}"#);
        assert_eq!(Deploy::call(call), Outcome::text("Deployed api to staging"));
    }

    #[test]
    fn production_needs_ok_true() {
        let call = Call::new("deploy", r#"{"service":"api","environment":"production"}"#);
        let yes = ElicitationResponse::accept(json!({"ok": true}));
        assert_eq!(
            answered(&call, yes),
            Outcome::text("Deployed api to production")
        );
        for no in [
            ElicitationResponse::accept(json!({"ok": false})),
            ElicitationResponse::decline(),
            ElicitationResponse::cancel(),
        ] {
            assert!(answered(&call, no).result().unwrap().is_error);
        }
    }

    #[test]
    fn confirm_asks_until_confirmed() {
        let call = Call::new("confirm", r#"{"action":"reboot"}"#);
        let yes = ElicitationResponse::accept(json!({"ok": true}));
        assert_eq!(answered(&call, yes), Outcome::text("confirmed reboot"));
        for no in [
            ElicitationResponse::decline(),
            ElicitationResponse::accept(json!({"ok": false})),
        ] {
            let again = answered(&call, no);
            assert!(
                again
                    .input_required()
                    .is_some_and(|i| i.requested("confirm").is_some())
            );
        }
    }
}
