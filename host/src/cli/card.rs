//! The server card options of `airlock serve`: what `GET /mcp/server-card`
//! says of this server.

use crate::transport::http::server_card::{self, CardSettings, DEFAULT_DESCRIPTION, DEFAULT_NAME};

/// Server card options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Server card")]
pub struct CardOptions {
    /// This server's name in its card (`GET /mcp/server-card`): reverse-DNS with one slash, e.g.
    /// com.example/tools.
    #[arg(long, value_name = "NAMESPACE/NAME", default_value = DEFAULT_NAME,
          value_parser = server_card::check_name)]
    pub server_name: String,
    /// What this server offers, in its card (1 to 100 characters).
    #[arg(long, value_name = "TEXT", default_value = DEFAULT_DESCRIPTION,
          value_parser = server_card::check_description)]
    pub server_description: String,
    /// The URL clients reach the MCP endpoint at, e.g. https://mcp.example.com/mcp, named in the
    /// card's `remotes` [default: the --oauth-resource URL]. Without either, the card names no
    /// remote.
    #[arg(long, value_name = "URL", value_parser = public_url)]
    pub public_url: Option<String>,
}

impl CardOptions {
    /// The card's settings; `oauth_resource` stands in for a missing public
    /// URL.
    pub fn settings(&self, oauth_resource: Option<&str>) -> CardSettings {
        CardSettings {
            name: self.server_name.clone(),
            description: self.server_description.clone(),
            public_url: self
                .public_url
                .clone()
                .or_else(|| oauth_resource.map(str::to_owned)),
        }
    }
}

/// An `http://` or `https://` URL.
fn public_url(text: &str) -> Result<String, String> {
    if (text.starts_with("https://") || text.starts_with("http://"))
        && !text.contains(char::is_whitespace)
    {
        Ok(text.to_owned())
    } else {
        Err(
            "the public URL is an http:// or https:// URL, e.g. https://mcp.example.com/mcp"
                .to_owned(),
        )
    }
}
