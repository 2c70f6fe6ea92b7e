//! WebDAV `multistatus` answers (RFC 4918, 4791) read with roxmltree: per resource its
//! address (resolved against the request's), whether it is a calendar, its display name,
//! ETag, iCalendar data and the principal and calendar home it names. Only properties
//! reported with a 2xx status count; namespaces are matched by URI, never by prefix.

use reqwest::Url;
use roxmltree::{Document, Node, ParsingOptions};

const DAV: &str = "DAV:";
/// The most XML nodes an answer may hold: a range of a family calendar has a few per
/// event; an answer past it is refused rather than held in memory.
const MAX_NODES: u32 = 500_000;
const CALDAV: &str = "urn:ietf:params:xml:ns:caldav";

/// What a server reported about one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultistatusResponse {
    pub href: Url,
    pub is_calendar: bool,
    pub display_name: Option<String>,
    pub etag: Option<String>,
    pub calendar_data: Option<String>,
    pub principal: Option<Url>,
    pub calendar_home: Option<Url>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Multistatus {
    pub responses: Vec<MultistatusResponse>,
}

fn is(node: &Node, namespace: &str, name: &str) -> bool {
    node.is_element()
        && node.tag_name().name() == name
        && node.tag_name().namespace() == Some(namespace)
}

fn child<'a, 'input>(
    node: &Node<'a, 'input>,
    namespace: &str,
    name: &str,
) -> Option<Node<'a, 'input>> {
    node.children().find(|child| is(child, namespace, name))
}

fn text_of(node: &Node) -> String {
    node.descendants()
        .filter(|node| node.is_text())
        .filter_map(|node| node.text())
        .collect::<String>()
}

/// A `<D:href>` inside `node`, resolved against `base`.
fn href_in(node: &Node, base: &Url) -> Option<Url> {
    let href = child(node, DAV, "href")?;
    base.join(text_of(&href).trim()).ok()
}

impl Multistatus {
    /// Reads a `207 Multi-Status` body; `base` is the address the request went to.
    pub fn parse(text: &str, base: &Url) -> Result<Self, String> {
        let options = ParsingOptions {
            nodes_limit: MAX_NODES,
            ..ParsingOptions::default()
        };
        let document = Document::parse_with_options(text, options)
            .map_err(|error| format!("not XML ({error})"))?;
        let root = document.root_element();
        if !is(&root, DAV, "multistatus") {
            return Err(format!(
                "expected a DAV multistatus, found <{}>",
                root.tag_name().name()
            ));
        }
        let mut responses = Vec::new();
        for response in root.children().filter(|node| is(node, DAV, "response")) {
            let Some(href) = href_in(&response, base) else {
                continue;
            };
            let mut found = MultistatusResponse {
                href,
                is_calendar: false,
                display_name: None,
                etag: None,
                calendar_data: None,
                principal: None,
                calendar_home: None,
            };
            for propstat in response.children().filter(|node| is(node, DAV, "propstat")) {
                let succeeded = child(&propstat, DAV, "status")
                    .map(|status| text_of(&status))
                    .is_some_and(|status| {
                        status
                            .split_whitespace()
                            .nth(1)
                            .is_some_and(|code| code.starts_with('2'))
                    });
                let Some(prop) = child(&propstat, DAV, "prop") else {
                    continue;
                };
                if !succeeded {
                    continue;
                }
                for property in prop.children().filter(Node::is_element) {
                    if is(&property, DAV, "resourcetype") {
                        found.is_calendar |= child(&property, CALDAV, "calendar").is_some();
                    } else if is(&property, DAV, "displayname") {
                        let name = text_of(&property).trim().to_owned();
                        found.display_name = (!name.is_empty()).then_some(name);
                    } else if is(&property, DAV, "getetag") {
                        let etag = text_of(&property).trim().to_owned();
                        found.etag = (!etag.is_empty()).then_some(etag);
                    } else if is(&property, CALDAV, "calendar-data") {
                        found.calendar_data = Some(text_of(&property));
                    } else if is(&property, DAV, "current-user-principal") {
                        found.principal = href_in(&property, base);
                    } else if is(&property, CALDAV, "calendar-home-set") {
                        found.calendar_home = href_in(&property, base);
                    }
                }
            }
            responses.push(found);
        }
        Ok(Multistatus { responses })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_reads_calendars_names_and_failed_properties_not_at_all() {
        let base = Url::parse("http://127.0.0.1:5232/alice/").unwrap();
        let text = r#"<?xml version='1.0' encoding='utf-8'?>
<multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><response><href>/alice/</href><propstat><prop><resourcetype><principal /><collection /></resourcetype><C:calendar-home-set><href>/alice/</href></C:calendar-home-set></prop><status>HTTP/1.1 200 OK</status></propstat><propstat><prop><displayname>Nope</displayname></prop><status>HTTP/1.1 404 Not Found</status></propstat></response><response><href>/alice/family/</href><propstat><prop><resourcetype><C:calendar /><collection /></resourcetype><displayname>Family</displayname></prop><status>HTTP/1.1 200 OK</status></propstat></response></multistatus>"#;
        let found = Multistatus::parse(text, &base).unwrap();
        assert_eq!(found.responses.len(), 2);
        assert!(!found.responses[0].is_calendar);
        assert_eq!(found.responses[0].display_name, None);
        assert_eq!(
            found.responses[0].calendar_home.as_ref().unwrap().as_str(),
            "http://127.0.0.1:5232/alice/"
        );
        assert!(found.responses[1].is_calendar);
        assert_eq!(found.responses[1].display_name.as_deref(), Some("Family"));
        assert_eq!(
            found.responses[1].href.as_str(),
            "http://127.0.0.1:5232/alice/family/"
        );
    }

    #[test]
    fn prefixes_do_not_matter_only_namespaces() {
        let base = Url::parse("https://cal.example/dav/").unwrap();
        let text = r#"<d:multistatus xmlns:d="DAV:" xmlns:cal="urn:ietf:params:xml:ns:caldav"><d:response><d:href>e1.ics</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag><cal:calendar-data>BEGIN:VCALENDAR&#13;
END:VCALENDAR</cal:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>"#;
        let found = Multistatus::parse(text, &base).unwrap();
        let response = &found.responses[0];
        assert_eq!(response.href.as_str(), "https://cal.example/dav/e1.ics");
        assert_eq!(response.etag.as_deref(), Some("\"1\""));
        assert!(
            response
                .calendar_data
                .as_ref()
                .unwrap()
                .starts_with("BEGIN:VCALENDAR")
        );
    }

    #[test]
    fn what_is_not_a_multistatus_is_refused_in_words() {
        let base = Url::parse("https://cal.example/").unwrap();
        assert!(
            Multistatus::parse("<html/>", &base)
                .unwrap_err()
                .contains("<html>")
        );
        assert!(
            Multistatus::parse("not xml", &base)
                .unwrap_err()
                .starts_with("not XML")
        );
    }
}
