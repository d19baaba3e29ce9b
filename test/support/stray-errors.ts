/**
 * Preloaded into a bot process by the last-resort tests: on SIGUSR2 it leaves a rejected promise
 * that nothing waits for, and on SIGWINCH it throws out of a callback, as a bug would. Nothing in
 * the bot itself is changed.
 */
process.on("SIGUSR2", () => {
  void Promise.reject(new Error("a stray rejection for the last-resort test"));
});
process.on("SIGWINCH", () => {
  setImmediate(() => {
    throw new Error("a stray exception for the last-resort test");
  });
});
