FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
COPY tools ./tools
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
# node itself, not npm, as PID 1: it takes the runtime's SIGTERM and shuts down gracefully.
CMD ["node", "--import", "tsx", "src/main.ts"]
