//! Tools declared once each: the name, the description, the argument type
//! and the handler in one place, from which both `list` and `call` come.

use std::borrow::Cow;
use std::fmt;

use serde::de::DeserializeOwned;

use crate::{Call, Outcome, Tool, Tools};

/// The tools of a component, each declared once with its handler.
///
/// [`ToolRouter::tool`] takes the tool's name, its handler and a function
/// that describes it. [`ToolRouter::list`] describes every tool, and
/// [`ToolRouter::call`] runs the handler whose name the call names, so the
/// name is written once and the two cannot disagree. Descriptions are built
/// only when listing: a call pays for no schema.
///
/// A handler takes the arguments, deserialized into its own type, and the
/// [`Call`] (for the round's answers, state and capabilities), and returns
/// anything that converts into an [`Outcome`], usually
/// `Result<Outcome, Error>`. Arguments that do not deserialize complete the
/// call with an `is_error` result reading `invalid arguments: <reason>`, as
/// [`Call::args`] does. A tool without arguments can take
/// [`serde_json::Value`].
///
/// Hand a router to [`export!`](crate::export) through [`RoutedTools`]:
///
/// ```no_run
/// use airlock_guest::{Call, Outcome, RoutedTools, Tool, ToolRouter, json};
/// use serde::Deserialize;
///
/// struct Greeter;
///
/// impl RoutedTools for Greeter {
///     fn router() -> ToolRouter {
///         ToolRouter::new().tool("greet", greet, |name| {
///             Tool::new(name, "Greets someone.")
///                 .input_schema(json!({
///                     "type": "object",
///                     "properties": { "name": { "type": "string" } },
///                     "required": ["name"]
///                 }))
///                 .read_only()
///         })
///     }
/// }
///
/// #[derive(Deserialize)]
/// struct Name {
///     name: String,
/// }
///
/// fn greet(Name { name }: Name, _: &Call) -> Outcome {
///     Outcome::text(format!("Hello, {name}!"))
/// }
///
/// airlock_guest::export!(Greeter);
/// ```
///
/// With the `schemars` feature, `.input::<Name>()` derives the schema from
/// `Name` (which then also derives `schemars::JsonSchema`); see
/// [`Tool::input`](crate::Tool#method.input).
#[derive(Default)]
pub struct ToolRouter {
    routes: Vec<Route>,
}

/// One tool: its name, how to describe it, and how to run it.
struct Route {
    name: Cow<'static, str>,
    describe: Box<dyn Fn(&str) -> Tool>,
    handle: Box<dyn Fn(&Call) -> Outcome>,
}

impl ToolRouter {
    /// A router without tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the tool `name`, run by `handler` and described by `describe`.
    ///
    /// `describe` gets the name, to pass to [`Tool::new`]; whatever name the
    /// tool it returns has, the router lists it as `name`. It runs only when
    /// the component is listed. `handler` gets the arguments as `A` and
    /// the call. Names must be unique within the component (Airlock refuses
    /// a component that lists a name twice).
    pub fn tool<A, R>(
        mut self,
        name: impl Into<Cow<'static, str>>,
        handler: impl Fn(A, &Call) -> R + 'static,
        describe: impl Fn(&str) -> Tool + 'static,
    ) -> Self
    where
        A: DeserializeOwned,
        R: Into<Outcome>,
    {
        self.routes.push(Route {
            name: name.into(),
            describe: Box::new(describe),
            handle: Box::new(move |call| match call.args::<A>() {
                Ok(args) => handler(args, call).into(),
                Err(invalid) => invalid.into(),
            }),
        });
        self
    }

    /// Describes every tool, in the order they were added.
    pub fn list(&self) -> Vec<Tool> {
        self.routes
            .iter()
            .map(|route| Tool {
                name: route.name.clone().into_owned(),
                ..(route.describe)(&route.name)
            })
            .collect()
    }

    /// Runs the handler of the tool [`Call::name`] names, or completes with
    /// [`Outcome::unknown_tool`] if there is none.
    pub fn call(&self, call: &Call) -> Outcome {
        match self.routes.iter().find(|route| route.name == call.name()) {
            Some(route) => (route.handle)(call),
            None => Outcome::unknown_tool(call.name()),
        }
    }
}

impl fmt::Debug for ToolRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.routes.iter().map(|route| &route.name))
            .finish()
    }
}

/// Tools given as a [`ToolRouter`]: implement this instead of [`Tools`],
/// whose `list` and `call` then come from the router.
///
/// Like [`Tools`], an associated function only: pass the type to
/// [`export!`](crate::export).
pub trait RoutedTools {
    /// The component's tools. Built once per listing and once per call
    /// round, each in a fresh instance.
    fn router() -> ToolRouter;
}

impl<T: RoutedTools> Tools for T {
    fn list() -> Vec<Tool> {
        T::router().list()
    }

    fn call(call: Call) -> Outcome {
        T::router().call(&call)
    }
}
