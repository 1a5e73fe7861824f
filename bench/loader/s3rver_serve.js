// An S3 server on loopback for the remote loader benchmark: s3rver keeps objects as files
// and answers ranged GETs by reading only their bytes. Usage: node s3rver_serve.js PORT DIR
const S3rver = require("s3rver");

const [port, directory] = process.argv.slice(2);
new S3rver({ port: Number(port), address: "127.0.0.1", directory, silent: true })
  .run()
  .then(() => console.log("ready"));
