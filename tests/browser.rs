//! The browser tier (feature `browser-tests`): the web view driven in headless Chromium
//! through its WebDriver.

#[path = "web_view/launch.rs"]
#[allow(dead_code)]
mod launch;
#[path = "web_view/webdriver.rs"]
#[allow(dead_code)]
mod webdriver;

mod web_view;
mod web_view_fork;
mod web_view_graph;
mod web_view_hitl;
mod web_view_words;
