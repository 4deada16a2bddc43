// Refresh the live parts of a page without reloading it: every element with data-live
// fetches its URL again every data-every ms and takes the answer as its content, until
// the answer holds a [data-final] element (the run has closed). A part is not refreshed
// while someone types into it.
for (const part of document.querySelectorAll("[data-live]")) {
  const every = Number(part.dataset.every || 2000);
  const refresh = async () => {
    if (part.querySelector("[data-final]")) return;
    const typing = part.contains(document.activeElement) && document.activeElement.matches("input, textarea, select");
    if (!typing) {
      try {
        const answer = await fetch(part.dataset.live, { headers: { "X-Live": "1" } });
        if (answer.ok) part.innerHTML = await answer.text();
      } catch (error) {
        // The console or the network is away: try again at the next tick.
      }
    }
    setTimeout(refresh, every);
  };
  setTimeout(refresh, every);
}
