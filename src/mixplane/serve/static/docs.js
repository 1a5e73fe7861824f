// The API's docs page: Swagger UI (from the swagger-ui-py package) over this service's /openapi.json.
// "Try it out" requests carry the token the dashboard keeps for this tab (or one given as
// /docs#token=TOKEN), like the dashboard's own.

import { hasToken, initToken, token } from "./api.js";

initToken();
document.getElementById("docs-token").hidden = !hasToken();

window.ui = window.SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null, // no request leaves for validator.swagger.io
  tryItOutEnabled: false,
  requestInterceptor(request) {
    const known = token();
    if (known) request.headers.Authorization = `Bearer ${known}`;
    return request;
  },
});
