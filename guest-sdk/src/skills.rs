//! Skills a component serves itself (the skills extension,
//! `io.modelcontextprotocol/skills`): a skill is its `SKILL.md`, served as
//! the resource `skill://<name>/SKILL.md`. Airlock finds it in the
//! component's resource list, reads it once when it lists the component,
//! and serves it in `skills/list` and `skills/get` with its frontmatter;
//! the skill's other files are whatever resources the component serves
//! under `skill://<name>/` (listed as `resources: "dynamic"`).
//!
//! Skills that are plain files need no code: ship them beside the component
//! as `NAME.skills/<name>/SKILL.md`.

use crate::resources::ResourceRead;
use crate::types::{ReadOutcome, Resource, ResourceContents};

/// A skill served by this component: its name and its `SKILL.md` text
/// (YAML frontmatter with `name`, the same name, and `description`).
#[derive(Debug, Clone, Copy)]
pub struct ServedSkill {
    name: &'static str,
    skill_md: &'static str,
}

impl ServedSkill {
    /// The skill `name` whose `SKILL.md` is `skill_md` (e.g.
    /// `include_str!("../skills/hashing/SKILL.md")`).
    pub const fn new(name: &'static str, skill_md: &'static str) -> Self {
        Self { name, skill_md }
    }

    /// `skill://<name>/SKILL.md`.
    pub fn uri(&self) -> String {
        format!("skill://{}/SKILL.md", self.name)
    }

    /// Its `SKILL.md` as a resource, for [`Resources::list`](crate::Resources::list).
    pub fn resource(&self) -> Resource {
        Resource::new(self.uri(), self.name).mime_type("text/markdown")
    }

    /// The answer to `read` if it reads this skill's `SKILL.md`, for
    /// [`Resources::read`](crate::Resources::read).
    pub fn read(&self, read: &ResourceRead) -> Option<ReadOutcome> {
        (read.uri() == self.uri()).then(|| {
            ResourceContents::text(self.uri(), self.skill_md)
                .mime_type("text/markdown")
                .into()
        })
    }
}
