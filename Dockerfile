# syntax=docker/dockerfile:1

# --- build: compile the bot, src/ alone (and better-sqlite3's native addon) ------------------
# The build context is src/, package*.json and two tsconfig files (.dockerignore): the sandbox,
# its simulators and the tests are not in it, and `npm run build` compiles nothing else.
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- deps: production dependencies only -----------------------------------------------------
FROM build AS deps
RUN npm ci --omit=dev --no-audit --no-fund

# --- runtime: small, non-root ---------------------------------------------------------------
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    VMBOT_MODE=slack \
    VMBOT_DB=/data/vmbot.sqlite \
    PORT=3000
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY package.json ./
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# V8's young generation is held to 2 MB semi-spaces (Node's default lets it grow to 16 MB each):
# reading a long job log leaves garbage that would otherwise grow the process by up to ~16 MB
# before a collection, against 2 MB here; see docs/BENCHMARKS.md, "Long job logs", and "Load"
# for what it costs under a burst. The benchmarks start the bot with the options written here.
CMD ["node", "--max-semi-space-size=2", "dist/main.js"]
