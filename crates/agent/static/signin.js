// The desk's sign-in page (a desk with a people file): name and password, then the desk.
"use strict";

const $ = (id) => document.getElementById(id);

$("signin-form").onsubmit = async (event) => {
  event.preventDefault();
  $("signin-submit").disabled = true;
  $("signin-error").hidden = true;
  try {
    const res = await fetch("/api/sign-in", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: $("signin-name").value, password: $("signin-password").value }),
    });
    if (res.ok) {
      location.href = "/";
      return;
    }
    const body = await res.json().catch(() => ({}));
    $("signin-error").textContent = body.message || res.statusText;
    $("signin-error").hidden = false;
    $("signin-password").value = "";
    $("signin-password").focus();
  } catch (e) {
    $("signin-error").textContent = "The desk is not reachable: " + e.message;
    $("signin-error").hidden = false;
  } finally {
    $("signin-submit").disabled = false;
  }
};
