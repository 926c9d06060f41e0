// GET /slots and POST /slots/{id}?action=save|restore|erase (server/slots.h).
#include <httplib.h>

#include <filesystem>

#include "server/http_server.h"
#include "server/json_text.h"
#include "server/slots.h"

namespace gufo::server {

using nlohmann::ordered_json;

std::shared_ptr<const LoadedModel> HttpServer::slot_model(const httplib::Request& req, httplib::Response& res,
                                                          const std::string& route) {
  if (std::optional<ApiError> closed = refuse_generation()) {
    reply_error(res, route, *closed);
    return nullptr;
  }
  const std::string name = req.get_param_value("model");
  if (!models_->offers(name)) {
    reply_error(res, route, model_not_found(name));
    return nullptr;
  }
  Result<std::shared_ptr<const LoadedModel>> model = models_->acquire(name);
  if (!model.ok()) {
    reply_error(res, route,
                ApiError{.status = 500,
                         .message = model.error().message,
                         .type = "server_error",
                         .param = "model",
                         .code = "model_load_failed"});
    return nullptr;
  }
  return std::move(model).value();
}

void HttpServer::slot_routes() {
  http_->Get("/slots", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string route = "/slots";
    if (!authorized(req, res, route)) return;
    const std::shared_ptr<const LoadedModel> model = slot_model(req, res, route);
    if (!model) return;
    auto slots = model->served().scheduler->slots();
    if (!slots.ok()) return reply_error(res, route, slot_error(slots.error()));
    reply(res, route, 200, dump(slots_body(*slots, model->served().n_ctx)));
  });
  http_->Post(R"(/slots/([^/]*))",
              [this](const httplib::Request& req, httplib::Response& res) { slot_action(req, res); });
}

void HttpServer::slot_action(const httplib::Request& req, httplib::Response& res) {
  const std::string route = "/slots/{id}";
  if (!authorized(req, res, route)) return;
  if (options_.slot_save_path.empty()) {
    return reply_error(res, route,
                       ApiError{.status = 501,
                                .message = "this server does not support slot actions: start it with "
                                           "--slot-save-path DIR",
                                .type = "not_supported_error",
                                .param = "",
                                .code = ""});
  }
  // Checked before the model is acquired, which may load it.
  const std::string action_name = req.get_param_value("action");
  const std::optional<SlotAction> action = slot_action_named(action_name);
  if (!action) {
    return reply_error(res, route,
                       bad_request("action must be save, restore or erase, not '" + action_name + "'", "action"));
  }
  const std::optional<int32_t> id = slot_id_of(req.matches[1].str());
  if (!id) return reply_error(res, route, bad_request("'" + req.matches[1].str() + "' is not a slot id", "id_slot"));
  const std::shared_ptr<const LoadedModel> model = slot_model(req, res, route);
  if (!model) return;
  engine::Scheduler& engine = *model->served().scheduler;
  if (*action == SlotAction::Erase) {
    const Result<int32_t> erased = engine.erase_slot(*id);
    if (!erased.ok()) return reply_error(res, route, slot_error(erased.error()));
    return reply(res, route, 200, dump(slot_erased_body(*id, *erased)));
  }
  ordered_json body;
  try {
    body = ordered_json::parse(req.body);
  } catch (const ordered_json::parse_error& e) {
    return reply_error(res, route,
                       bad_request(std::string("the body is not valid JSON: ") + e.what(), "", "invalid_json"));
  }
  const auto named = body.is_object() ? body.find("filename") : body.end();
  if (named == body.end() || !named->is_string()) {
    return reply_error(res, route, bad_request("'filename' (a string) is required", "filename"));
  }
  const std::string filename = named->get<std::string>();
  if (std::optional<std::string> problem = slot_filename_problem(filename)) {
    return reply_error(res, route, bad_request("filename: " + *problem, "filename"));
  }
  // NOTE(slots): errors name the file as the client gave it, not where it lies on the server.
  const std::string path = (std::filesystem::path(options_.slot_save_path) / filename).string();
  const auto in_client_terms = [&](Error error) {
    if (error.message.starts_with(path)) error.message = filename + error.message.substr(path.size());
    return slot_error(error);
  };
  const engine::SessionIdentity& identity = model->served().session;
  if (*action == SlotAction::Save) {
    const auto saved = engine.save_slot(*id, path, identity);
    if (!saved.ok()) return reply_error(res, route, in_client_terms(saved.error()));
    return reply(res, route, 200, dump(slot_saved_body(*id, filename, *saved)));
  }
  const auto restored = engine.restore_slot(*id, path, identity);
  if (!restored.ok()) return reply_error(res, route, in_client_terms(restored.error()));
  reply(res, route, 200, dump(slot_restored_body(*id, filename, *restored)));
}

}  // namespace gufo::server
