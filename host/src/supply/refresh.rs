//! Resolving tags again while the server runs (`--tag-refresh`), for a
//! server started without a lock.
//!
//! Every interval, each component named by tag has its tag resolved again
//! (a `HEAD` request). When it points to another digest, that digest is
//! pulled and checked exactly as at start (layout, digests, size, and the
//! signature when signers are trusted), staged beside the old one, and put in
//! the old file's place among the pulled files: the tools directory's
//! watcher then sees a changed file and reloads it through the same path
//! as a component replaced in the directory. One `info` line names the
//! reference and the old and new digests. A new digest that is refused
//! leaves the old one serving, with one `warn` line (once per refused
//! digest); so does a registry that cannot be reached. A digest refused
//! for its signature alone is checked again at each look, since signing
//! follows pushing (a tag can move before its signature is there); one
//! whose content was refused is not pulled again, since a digest's
//! content never changes.
//!
//! With a lock, tags are never resolved again: the lock wins.

use std::time::Duration;

use tracing::{debug, info, warn};

use super::pull::{PullError, Puller};
use super::store::Store;
use super::{Served, Staged, SupplySettings, obtain};
use crate::registry::pulled_files::PulledFiles;

/// Starts resolving the tags of `staged` again every `--tag-refresh`,
/// re-staging moved ones into `files`; `None` if tags are not to be
/// resolved again (no `--tag-refresh`, or a lock, which wins: said once).
pub fn spawn(
    settings: &SupplySettings,
    staged: Staged,
    files: PulledFiles,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let Some(every) = settings.tag_refresh else {
        return Ok(None);
    };
    if settings.lock.is_some() {
        info!(
            "--tag-refresh is ignored: with --lock, the locked digests are served and tags are never resolved again"
        );
        return Ok(None);
    }
    let store = Store::open(&settings.cache_dir)?;
    let puller = Puller::new(&settings.registry, &staged.components, store.clone())?;
    let refresher = Refresher {
        puller,
        store,
        settings: settings.clone(),
        files,
    };
    let tagged: Vec<Tagged> = staged
        .served
        .into_iter()
        .filter(|served| served.wanted.reference.digest().is_none())
        .map(|served| Tagged {
            served,
            refused: None,
        })
        .collect();
    Ok(Some(tokio::spawn(refresher.run(every, tagged))))
}

/// A component served by tag.
struct Tagged {
    served: Served,
    /// The last digest its tag pointed to that was refused, so that it is
    /// reported once.
    refused: Option<Refused>,
}

/// A digest a tag moved to that was refused.
struct Refused {
    digest: String,
    /// Its content was refused (layout, digests, size), not only its
    /// signature: it is not pulled again.
    for_good: bool,
}

struct Refresher {
    puller: Puller,
    store: Store,
    settings: SupplySettings,
    files: PulledFiles,
}

impl Refresher {
    async fn run(self, every: Duration, mut tagged: Vec<Tagged>) {
        let trust = match self.settings.trust() {
            Ok(trust) => trust,
            Err(err) => {
                warn!("tags are not resolved again: {err:#}");
                return;
            }
        };
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            for component in &mut tagged {
                self.look_again(trust.as_ref(), component).await;
            }
        }
    }

    /// Resolves `component`'s tag; re-stages it if the tag moved to a
    /// digest that passes every check.
    async fn look_again(&self, trust: Option<&super::Trust>, component: &mut Tagged) {
        let served = &mut component.served;
        let reference = served.wanted.reference.clone();
        let now = match self.puller.resolve(&reference).await {
            Ok(digest) => digest,
            Err(PullError::Refused { reason, .. } | PullError::Unreachable(reason)) => {
                warn!(%reference, digest = %served.digest, "the tag was not resolved again, the served digest keeps serving: {reason}");
                return;
            }
        };
        let refused_before = component
            .refused
            .as_ref()
            .filter(|refused| refused.digest == now);
        if now == served.digest || refused_before.is_some_and(|refused| refused.for_good) {
            return;
        }
        let reported = refused_before.is_some();
        // Pinned to the digest just resolved: taken from the pull cache
        // when a look before pulled it (and refused its signature).
        match obtain(&self.puller, trust, &served.wanted, Some(&now)).await {
            Ok(pulled) => {
                let file = match self.store.stage(&served.wanted, &pulled) {
                    Ok(file) => file,
                    Err(err) => {
                        warn!(%reference, old = %served.digest, new = %pulled.digest, "the tag moved, but the new digest cannot be staged, the old one keeps serving: {err:#}");
                        return;
                    }
                };
                info!(%reference, old = %served.digest, new = %pulled.digest, "the tag moved: the component is reloaded at its new digest");
                self.files.replace(&served.file, file.clone());
                served.file = file;
                served.digest = pulled.digest;
                component.refused = None;
            }
            // Pinned, a refusal is of `now`.
            Err(PullError::Refused { reason, .. }) => {
                let message =
                    "the tag moved, but its new digest is refused, the old one keeps serving";
                if reported {
                    debug!(%reference, old = %served.digest, new = %now, "{message}: {reason}");
                } else {
                    warn!(%reference, old = %served.digest, new = %now, "{message}: {reason}");
                }
                let for_good = !self.puller.holds(&now);
                component.refused = Some(Refused {
                    digest: now,
                    for_good,
                });
            }
            Err(PullError::Unreachable(reason)) => {
                warn!(%reference, old = %served.digest, new = %now, "the tag moved, but its new digest could not be pulled, the old one keeps serving: {reason}");
            }
        }
    }
}
