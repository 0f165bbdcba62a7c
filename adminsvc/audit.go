package adminsvc

import "github.com/gofiber/fiber/v2"

// registerAudit adds the audit log: the middleware recording admin writes and GET /audit-logs.
// Not built yet: this is filled in by the work on issue #5.
func (s *Service) registerAudit(v1 fiber.Router) {}
