//! Skills served from files (the skills extension, SEP-2640): the
//! directory `NAME.skills/` beside the component `NAME.wasm` holds one
//! directory per skill, `<skill>/SKILL.md` (YAML frontmatter, then the
//! instructions) and the files it refers to.
//!
//! A skill is read whole when its component loads, and again only when one
//! of its files changes (the component's stamp covers the tree; see
//! [`tree_stamp`]): its files' bytes, their SHA-256 digests and its
//! frontmatter (as JSON) are computed once per version. Each file is a
//! resource at `skill://<skill>/<path>`.
//!
//! A skill that breaks a rule is skipped with one `warn!` line saying why,
//! and the component and its other skills still load: its name must follow
//! the Agent Skills naming rules and be the frontmatter's `name`, the
//! frontmatter must have a `name` and a `description` and be read within
//! its bounds (no aliases, `--max-json-depth`, the size of an entry: see
//! [`super::frontmatter`]), it may hold at most `--max-skill-files` files and
//! `--max-skill-size` bytes, and hold only regular files and directories
//! (no links) named with URI-safe characters, and its entry must fit a page
//! of `skills/list`. Entries whose names start with `.` are ignored. A skill
//! its component serves itself is held to the same rules (its files aside).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::file_stamp::FileStamp;
use super::frontmatter::{self, FrontmatterLimits};
use crate::runtime::RuntimeLimits;
use crate::untrusted_file;

/// The file every skill holds at its root.
pub const SKILL_FILE: &str = "SKILL.md";

/// The scheme of skill resources.
pub const SCHEME: &str = "skill://";

/// The MIME type of a directory in `resources/directory/read`.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// How many skills one component may ship, how many files and bytes one
/// skill may hold, and how large and deep what it lists may be.
#[derive(Debug, Clone, Copy)]
pub struct SkillLimits {
    /// Most skills in one component's skills directory.
    pub max_skills: usize,
    /// Most files in one skill, `SKILL.md` included.
    pub max_files: usize,
    /// Most bytes all files of one skill may take together.
    pub max_bytes: u64,
    /// Most bytes one skill's entry of `skills/list` may take: what a page
    /// leaves an entry within the output limit.
    pub max_entry_bytes: usize,
    /// Deepest nesting of its frontmatter as JSON (`--max-json-depth`).
    pub max_json_depth: usize,
}

/// Bytes a page of `skills/list` takes besides its entries, at most.
const SKILLS_PAGE_FRAME: usize = 256;

impl SkillLimits {
    /// The limits the server's `limits` set.
    pub fn of(limits: &RuntimeLimits) -> SkillLimits {
        SkillLimits {
            max_skills: limits.max_skills,
            max_files: limits.max_skill_files,
            max_bytes: limits.max_skill_bytes,
            max_entry_bytes: limits.max_output_bytes.saturating_sub(SKILLS_PAGE_FRAME),
            max_json_depth: limits.max_json_depth,
        }
    }

    /// What its frontmatter may be: at most as deep as any JSON value of a
    /// component, and no larger than its entry.
    fn frontmatter(&self) -> FrontmatterLimits {
        FrontmatterLimits {
            max_depth: self.max_json_depth,
            max_bytes: self.max_entry_bytes,
        }
    }
}

impl Default for SkillLimits {
    /// The server's default limits: the extension's 512 files and 16 MiB
    /// per skill, 256 skills per component.
    fn default() -> Self {
        SkillLimits::of(&RuntimeLimits::default())
    }
}

/// One skill: read whole from a skills directory, or served by its
/// component as resources.
#[derive(Debug)]
pub struct Skill {
    /// Its name: its directory's, and its frontmatter's `name`.
    pub name: String,
    /// The URI of its `SKILL.md`, which names the skill.
    pub uri: String,
    /// Its `SKILL.md` frontmatter, as JSON.
    pub frontmatter: Map<String, Value>,
    /// Its files, sorted by path; `SKILL.md` is one of them. Empty for a
    /// skill its component serves.
    pub files: Vec<SkillFile>,
    /// Whether its component serves it, as resources under
    /// `skill://<skill>/`: its files are then not enumerated
    /// (`resources: "dynamic"`), and reads go to the component.
    pub served_by_component: bool,
}

/// One file of a skill.
#[derive(Debug)]
pub struct SkillFile {
    /// Its path inside the skill, `/`-separated.
    pub path: String,
    /// `skill://<skill>/<path>`.
    pub uri: String,
    /// Its bytes, as read when the skill loaded.
    pub bytes: Arc<[u8]>,
    /// `sha256:<hex>` of its bytes.
    pub digest: String,
    /// Its MIME type, by its extension.
    pub mime_type: &'static str,
}

/// A skill as `skills/list` and `skills/get` serve it: its URI, its
/// frontmatter, and `{uri, digest, size}` of each of its files.
impl Serialize for Skill {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Listed<'a> {
            uri: &'a str,
            digest: &'a str,
            size: usize,
        }
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Resources<'a> {
            Listed(Vec<Listed<'a>>),
            Dynamic(&'static str),
        }
        #[derive(Serialize)]
        struct Entry<'a> {
            uri: &'a str,
            frontmatter: &'a Map<String, Value>,
            resources: Resources<'a>,
        }
        let resources = if self.served_by_component {
            Resources::Dynamic("dynamic")
        } else {
            Resources::Listed(
                self.files
                    .iter()
                    .map(|file| Listed {
                        uri: &file.uri,
                        digest: &file.digest,
                        size: file.bytes.len(),
                    })
                    .collect(),
            )
        };
        Entry {
            uri: &self.uri,
            frontmatter: &self.frontmatter,
            resources,
        }
        .serialize(serializer)
    }
}

impl Skill {
    /// The URI of the skill's root directory: `skill://<skill>`.
    pub fn directory_uri(&self) -> String {
        format!("{SCHEME}{}", self.name)
    }

    /// The children of the directory at `path` inside the skill (`""`: its
    /// root), in path order: `(uri, name, Some(file))` for a file,
    /// `(uri, name, None)` for a subdirectory. `None` if no directory of
    /// the skill is at `path`, or if its component serves it (its files are
    /// not enumerated).
    pub fn children(&self, path: &str) -> Option<Vec<(String, String, Option<&SkillFile>)>> {
        if self.served_by_component {
            return None;
        }
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}/")
        };
        let mut children: Vec<(String, String, Option<&SkillFile>)> = Vec::new();
        let mut found = path.is_empty();
        for file in &self.files {
            let Some(rest) = file.path.strip_prefix(&prefix) else {
                continue;
            };
            found = true;
            match rest.split_once('/') {
                None => children.push((file.uri.clone(), rest.to_owned(), Some(file))),
                Some((dir, _)) => {
                    if !children
                        .last()
                        .is_some_and(|(_, name, file)| file.is_none() && name == dir)
                    {
                        let uri = format!("{}/{prefix}{dir}", self.directory_uri());
                        children.push((uri, dir.to_owned(), None));
                    }
                }
            }
        }
        found.then_some(children)
    }
}

/// The skills directory of the component at `component`: `NAME.skills`
/// beside `NAME.wasm`.
pub fn directory_for(component: &Path) -> PathBuf {
    component.with_extension("skills")
}

/// The stamps of every entry of the component's skills directory (empty
/// if it has none), sorted: replacing, adding or removing any file of a
/// skill changes it. Links are not followed; nothing is opened.
pub(crate) fn tree_stamp(component: &Path) -> Vec<(PathBuf, FileStamp)> {
    let mut stamps = Vec::new();
    let mut pending = vec![directory_for(component)];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if let Ok(stamp) = FileStamp::of_entry(&path) {
                if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                    pending.push(path.clone());
                }
                stamps.push((path, stamp));
            }
        }
    }
    stamps.sort_by(|a, b| a.0.cmp(&b.0));
    stamps
}

/// Reads every skill of the component at `component` (blocking), sorted by
/// name; skips, with a warning naming it, each skill that breaks a rule or
/// whose entry would not fit a page of `skills/list` within
/// `limits.max_entry_bytes`. Of more than `limits.max_skills` entries, the
/// first by name are read and the others skipped, with one warning.
pub(crate) fn load(component: &Path, limits: SkillLimits) -> Vec<Arc<Skill>> {
    let dir = directory_for(component);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut names: Vec<_> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    if names.len() > limits.max_skills {
        let skipped = names.split_off(limits.max_skills);
        tracing::warn!(
            skills = %dir.display(),
            "skipping {} skills (from `{}` on): more than --max-skills {} in one component",
            skipped.len(),
            skipped[0],
            limits.max_skills
        );
    }
    let mut skills = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let loaded = load_one(&path, &name, limits).and_then(|skill| fits_a_page(skill, limits));
        match loaded {
            Ok(skill) => skills.push(Arc::new(skill)),
            Err(reason) => {
                tracing::warn!(skill = %path.display(), "skipping skill: {reason}");
            }
        }
    }
    skills
}

/// The name of the skill whose `SKILL.md` is at `uri`
/// (`skill://<name>/SKILL.md`, the name one path segment), if it is one.
pub(crate) fn skill_md_name(uri: &str) -> Option<&str> {
    let name = uri
        .strip_prefix(SCHEME)?
        .strip_suffix(SKILL_FILE)?
        .strip_suffix('/')?;
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

/// The skill `name` its component serves, whose `SKILL.md` reads `text`:
/// checked like a skills directory's (its name, its `SKILL.md` within
/// `--max-skill-size`, its frontmatter, its entry within a page of
/// `skills/list`).
pub(crate) fn served_by_component(
    name: &str,
    text: &str,
    limits: SkillLimits,
) -> Result<Skill, String> {
    check_name(name)?;
    if text.len() as u64 > limits.max_bytes {
        return Err(format!(
            "its {SKILL_FILE} takes {} bytes, more than {} bytes (--max-skill-size)",
            text.len(),
            limits.max_bytes
        ));
    }
    let skill = Skill {
        name: name.to_owned(),
        uri: format!("{SCHEME}{name}/{SKILL_FILE}"),
        frontmatter: named_frontmatter(text, name, limits)?,
        files: Vec::new(),
        served_by_component: true,
    };
    fits_a_page(skill, limits)
}

/// `skill`, if its entry fits a page of `skills/list` within
/// `limits.max_entry_bytes`.
fn fits_a_page(skill: Skill, limits: SkillLimits) -> Result<Skill, String> {
    let bytes = serde_json::to_string(&skill).map_or(usize::MAX, |entry| entry.len());
    if bytes > limits.max_entry_bytes {
        return Err(format!(
            "its entry takes {bytes} bytes, more than a page of skills/list holds within the output limit (--max-output)"
        ));
    }
    Ok(skill)
}

/// The frontmatter of the `SKILL.md` `text` of the skill `name`, read
/// within `limits`: it must name the skill and describe it.
fn named_frontmatter(
    text: &str,
    name: &str,
    limits: SkillLimits,
) -> Result<Map<String, Value>, String> {
    let frontmatter = frontmatter::parse(text, limits.frontmatter())?;
    match frontmatter.get("name") {
        Some(Value::String(named)) if named == name => {}
        Some(Value::String(named)) => {
            return Err(format!(
                "its frontmatter names it `{named}`, not `{name}` as its place does"
            ));
        }
        _ => return Err("its frontmatter has no string `name`".to_owned()),
    }
    if !matches!(frontmatter.get("description"), Some(Value::String(d)) if !d.is_empty()) {
        return Err("its frontmatter has no non-empty string `description`".to_owned());
    }
    Ok(frontmatter)
}

/// Reads the skill in `dir`, called `name`.
fn load_one(dir: &Path, name: &str, limits: SkillLimits) -> Result<Skill, String> {
    check_name(name)?;
    let kind = std::fs::symlink_metadata(dir).map_err(|err| format!("cannot read it: {err}"))?;
    if !kind.is_dir() {
        return Err("it is not a directory".to_owned());
    }
    let mut found = Vec::new();
    walk(dir, "", limits, &mut found)?;
    found.sort();
    let mut files = Vec::with_capacity(found.len());
    let mut total = 0u64;
    for relative in found {
        let path = dir.join(&relative);
        let left = limits.max_bytes - total;
        let bytes = untrusted_file::read(&path, left).map_err(|err| match err {
            untrusted_file::FileError::TooLarge { .. } => format!(
                "its files take more than {} bytes (--max-skill-size)",
                limits.max_bytes
            ),
            err => format!("{relative}: {err}"),
        })?;
        total += bytes.len() as u64;
        let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
        files.push(SkillFile {
            uri: format!("{SCHEME}{name}/{relative}"),
            mime_type: mime_type(&relative),
            digest: format!("sha256:{}", crate::hex::encode(digest.as_ref())),
            bytes: bytes.into(),
            path: relative,
        });
    }
    let skill_md = files
        .iter()
        .find(|file| file.path == SKILL_FILE)
        .ok_or_else(|| format!("it has no {SKILL_FILE} at its root"))?;
    let text = std::str::from_utf8(&skill_md.bytes)
        .map_err(|_| format!("its {SKILL_FILE} is not UTF-8"))?;
    let frontmatter = named_frontmatter(text, name, limits)?;
    Ok(Skill {
        name: name.to_owned(),
        uri: format!("{SCHEME}{name}/{SKILL_FILE}"),
        frontmatter,
        files,
        served_by_component: false,
    })
}

/// Adds the files under `dir` (at `prefix` inside the skill) to `found`,
/// refusing links, special files, names that need escaping in a URI, and
/// more than `limits.max_files` files.
fn walk(
    dir: &Path,
    prefix: &str,
    limits: SkillLimits,
    found: &mut Vec<String>,
) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|err| format!("cannot read {prefix}: {err}"))?;
    for entry in entries {
        let entry = entry.map_err(|err| format!("cannot read {prefix}: {err}"))?;
        let Ok(name) = entry.file_name().into_string() else {
            return Err(format!("{prefix}: a file name is not UTF-8"));
        };
        if name.starts_with('.') {
            continue;
        }
        let relative = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if !name.bytes().all(is_uri_safe) {
            return Err(format!(
                "`{relative}`: names may hold only letters, digits, `-`, `_`, `.` and `~`"
            ));
        }
        let kind = entry
            .file_type()
            .map_err(|err| format!("{relative}: {err}"))?;
        if kind.is_dir() {
            walk(&entry.path(), &relative, limits, found)?;
        } else if kind.is_file() {
            if found.len() == limits.max_files {
                return Err(format!(
                    "it holds more than {} files (--max-skill-files)",
                    limits.max_files
                ));
            }
            found.push(relative);
        } else {
            return Err(format!(
                "`{relative}` is not a regular file or a directory (links are not followed)"
            ));
        }
    }
    Ok(())
}

/// A byte a path segment may hold unescaped: RFC 3986's unreserved.
fn is_uri_safe(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~')
}

/// Checks a skill name against the Agent Skills naming rules: 1 to 64
/// characters, lowercase letters, digits and hyphens, no hyphen first,
/// last or twice in a row.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if valid {
        Ok(())
    } else {
        Err(format!(
            "its name `{name}` breaks the naming rules (1-64 lowercase letters, digits and hyphens; no hyphen first, last or twice in a row)"
        ))
    }
}

/// The MIME type of a skill file, by its extension.
fn mime_type(path: &str) -> &'static str {
    let extension = path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("txt") => "text/plain",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, relative: &str, text: &[u8]) {
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const SKILL_MD: &str =
        "---\nname: demo\ndescription: Shows how\nmetadata:\n  version: 2\n---\n# Demo\n";

    /// A tools directory holding `x.wasm`'s skills directory, and the
    /// component path.
    fn component(files: &[(&str, &[u8])]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let skills = dir.path().join("x.skills");
        for (relative, bytes) in files {
            write(&skills, relative, bytes);
        }
        let wasm = dir.path().join("x.wasm");
        (dir, wasm)
    }

    #[test]
    fn a_skill_is_read_with_its_frontmatter_digests_and_directories() {
        let (_dir, wasm) = component(&[
            ("demo/SKILL.md", SKILL_MD.as_bytes()),
            ("demo/references/GUIDE.md", b"guide".as_slice()),
            ("demo/.hidden", b"ignored".as_slice()),
        ]);
        let skills = load(&wasm, SkillLimits::default());
        assert_eq!(skills.len(), 1);
        let skill = &skills[0];
        assert_eq!(skill.uri, "skill://demo/SKILL.md");
        assert_eq!(
            Value::Object(skill.frontmatter.clone()),
            serde_json::json!({"name": "demo", "description": "Shows how", "metadata": {"version": 2}})
        );
        let paths: Vec<_> = skill.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["SKILL.md", "references/GUIDE.md"]);
        assert_eq!(
            skill.files[1].digest,
            "sha256:83ca68be6227af2feb15f227485ed18aff8ecae99416a4bd6df3be1b5e8059b4",
            "sha256 of `guide`"
        );
        assert_eq!(skill.files[0].mime_type, "text/markdown");
        let root = skill.children("").unwrap();
        assert_eq!(
            root.iter()
                .map(|(uri, _, file)| (uri.as_str(), file.is_none()))
                .collect::<Vec<_>>(),
            [
                ("skill://demo/SKILL.md", false),
                ("skill://demo/references", true)
            ]
        );
        assert_eq!(skill.children("references").unwrap().len(), 1);
        assert!(skill.children("SKILL.md").is_none());
        assert!(skill.children("nowhere").is_none());
    }

    #[test]
    fn skills_that_break_a_rule_are_skipped_and_the_others_load() {
        let too_many: Vec<(String, Vec<u8>)> = (0..4)
            .map(|i| (format!("many/f{i}.txt"), b"x".to_vec()))
            .collect();
        let zeros = [0u8; 2048];
        let mut files: Vec<(&str, &[u8])> = vec![
            ("demo/SKILL.md", SKILL_MD.as_bytes()),
            (
                "Bad--Name/SKILL.md",
                b"---\nname: Bad--Name\ndescription: d\n---\n".as_slice(),
            ),
            (
                "other/SKILL.md",
                b"---\nname: demo\ndescription: d\n---\n".as_slice(),
            ),
            ("plain/SKILL.md", b"no frontmatter".as_slice()),
            (
                "big/SKILL.md",
                b"---\nname: big\ndescription: d\n---\n".as_slice(),
            ),
            ("big/data.bin", zeros.as_slice()),
            (
                "many/SKILL.md",
                b"---\nname: many\ndescription: d\n---\n".as_slice(),
            ),
            ("bomb/SKILL.md", BOMB.as_bytes()),
            (
                "deep/SKILL.md",
                b"---\nname: deep\ndescription: d\nm: [[[[[[[[]]]]]]]]\n---\n".as_slice(),
            ),
        ];
        for (path, bytes) in &too_many {
            files.push((path, bytes.as_slice()));
        }
        let (_dir, wasm) = component(&files);
        let limits = SkillLimits {
            max_skills: 16,
            max_files: 4,
            max_bytes: 1024,
            max_json_depth: 8,
            ..SkillLimits::default()
        };
        let loaded: Vec<_> = load(&wasm, limits).iter().map(|s| s.name.clone()).collect();
        assert_eq!(loaded, ["demo"]);
        let why = |name: &str| load_one(&wasm.with_extension("skills").join(name), name, limits);
        assert!(why("Bad--Name").unwrap_err().contains("naming rules"));
        assert!(why("other").unwrap_err().contains("names it `demo`"));
        assert!(why("plain").unwrap_err().contains("frontmatter"));
        assert!(why("big").unwrap_err().contains("--max-skill-size"));
        assert!(why("many").unwrap_err().contains("--max-skill-files"));
        assert!(why("bomb").unwrap_err().contains("alias"));
        assert!(why("deep").unwrap_err().contains("--max-json-depth"));
    }

    /// A frontmatter of eight levels of eight aliases (8^8 strings once
    /// expanded), in a few hundred bytes.
    const BOMB: &str = "---\nname: bomb\ndescription: d\n\
        a: &a [x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\n\
        c: &c [*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c]\n\
        e: &e [*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e]\n\
        g: &g [*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g]\n---\n";

    #[test]
    fn a_served_skill_is_held_to_the_limits_of_a_file_skill() {
        let limits = SkillLimits::default();
        let err = served_by_component("bomb", BOMB, limits).unwrap_err();
        assert!(err.contains("alias"), "{err}");
        // An entry over what a page of skills/list leaves it.
        let long = format!("---\nname: long\ndescription: {}\n---\n", "d".repeat(450));
        let small = SkillLimits {
            max_entry_bytes: 512,
            ..limits
        };
        assert!(served_by_component("long", &long, limits).is_ok());
        let err = served_by_component("long", &long, small).unwrap_err();
        assert!(err.contains("its entry takes"), "{err}");
        // A SKILL.md over --max-skill-size.
        let tiny = SkillLimits {
            max_bytes: 64,
            ..limits
        };
        let err = served_by_component("long", &long, tiny).unwrap_err();
        assert!(err.contains("--max-skill-size"), "{err}");
    }

    #[test]
    fn beyond_the_most_skills_only_the_first_by_name_are_read() {
        let names = ["a", "b", "c"];
        let files: Vec<(String, String)> = names
            .iter()
            .map(|name| {
                (
                    format!("{name}/SKILL.md"),
                    format!("---\nname: {name}\ndescription: d\n---\n"),
                )
            })
            .collect();
        let files: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_bytes()))
            .collect();
        let (_dir, wasm) = component(&files);
        let limits = SkillLimits {
            max_skills: 2,
            ..SkillLimits::default()
        };
        let loaded: Vec<_> = load(&wasm, limits).iter().map(|s| s.name.clone()).collect();
        assert_eq!(loaded, ["a", "b"]);
    }

    #[test]
    fn a_component_skill_is_named_by_its_skill_md_uri_and_checked_like_a_file_skill() {
        assert_eq!(skill_md_name("skill://demo/SKILL.md"), Some("demo"));
        for uri in [
            "skill:///SKILL.md",
            "skill://a/b/SKILL.md",
            "skill://demo/notes.md",
            "test://demo/SKILL.md",
        ] {
            assert_eq!(skill_md_name(uri), None, "{uri}");
        }
        let limits = SkillLimits::default();
        let skill = served_by_component("demo", SKILL_MD, limits).unwrap();
        assert!(skill.served_by_component && skill.files.is_empty());
        assert_eq!(
            serde_json::to_value(&skill).unwrap()["resources"],
            "dynamic"
        );
        assert!(skill.children("").is_none());
        assert!(
            served_by_component("other", SKILL_MD, limits)
                .unwrap_err()
                .contains("names it `demo`")
        );
        assert!(served_by_component("Bad--Name", SKILL_MD, limits).is_err());
    }

    #[test]
    fn links_are_refused() {
        let (dir, wasm) = component(&[("demo/SKILL.md", SKILL_MD.as_bytes())]);
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("x.skills/demo/h.txt"))
            .unwrap();
        assert!(load(&wasm, SkillLimits::default()).is_empty());
    }

    #[test]
    fn the_tree_stamp_sees_a_changed_file() {
        let (dir, wasm) = component(&[("demo/SKILL.md", SKILL_MD.as_bytes())]);
        let before = tree_stamp(&wasm);
        assert_eq!(before.len(), 2, "the skill's directory and its file");
        write(
            &dir.path().join("x.skills"),
            "demo/SKILL.md",
            b"changed, longer",
        );
        assert_ne!(tree_stamp(&wasm), before);
        assert!(tree_stamp(&dir.path().join("none.wasm")).is_empty());
    }
}
