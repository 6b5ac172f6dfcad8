//! Every sample tool's flow to completion, multi-round ones included, over
//! HTTP and over stdio. The flows live in `airlock_e2e::flows`.

use airlock_e2e::flows;
use airlock_e2e::{Airlock, ToolsDir, over_both_transports};

over_both_transports! {
    sha256: "hash" => flows::sha256;
    work_item_resolved_as_duplicate: "work_items" => flows::work_item_duplicate;
    work_item_resolved_as_fixed: "work_items" => flows::work_item_fixed;
    work_item_with_resolution_given: "work_items" => flows::work_item_no_question;
    work_item_question_declined: "work_items" => flows::work_item_declined;
    deploy_to_production_confirmed: "deploy" => flows::deploy_production_accepted;
    deploy_to_production_refused: "deploy" => flows::deploy_production_refused;
    deploy_to_staging: "deploy" => flows::deploy_staging;
    confirm_action: "deploy" => flows::confirm;
    summarize_with_sampling: "summarize" => flows::summarize;
    list_roots: "workspace" => flows::list_roots;
    build_report_in_slices: "report" => flows::build_report;
    probe_asks_every_kind: "probe" => flows::probe_ask;
}

/// All six samples in one server: every flow still works side by side.
#[test]
fn all_samples_in_one_server() {
    let server = Airlock::new(&ToolsDir::with(airlock_e2e::SAMPLES)).start_http();
    let client = server.client();
    flows::sha256(&client);
    flows::work_item_duplicate(&client);
    flows::deploy_production_accepted(&client);
    flows::confirm(&client);
    flows::summarize(&client);
    flows::list_roots(&client);
    flows::build_report(&client);
}
