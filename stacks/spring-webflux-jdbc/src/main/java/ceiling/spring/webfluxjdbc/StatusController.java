package ceiling.spring.webfluxjdbc;

import ceiling.spring.api.ApiException;
import ceiling.spring.api.CreateStatusRequest;
import ceiling.spring.api.Inputs;
import ceiling.spring.api.StatusDto;
import ceiling.spring.api.UpdateStatusRequest;
import ceiling.spring.jdbc.StatusRepository;
import java.util.List;
import java.util.UUID;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

@RestController
@RequestMapping("/status")
public class StatusController {
    private final StatusRepository statuses;
    private final Blocking blocking;

    public StatusController(StatusRepository statuses, Blocking blocking) {
        this.statuses = statuses;
        this.blocking = blocking;
    }

    @GetMapping("/{id}")
    public Mono<StatusDto> get(@PathVariable String id) {
        UUID uuid = Inputs.uuid(id);
        return blocking.call(() -> statuses.findById(uuid).orElseThrow(() -> ApiException.notFound("no status with id " + uuid)));
    }

    @GetMapping
    public Mono<List<StatusDto>> getMany(@RequestParam(required = false) String ids) {
        List<UUID> uuids = Inputs.ids(ids);
        return blocking.call(() -> statuses.findByIds(uuids));
    }

    @PostMapping
    @ResponseStatus(HttpStatus.CREATED)
    public Mono<StatusDto> create(@RequestBody CreateStatusRequest body) {
        var status = Inputs.newStatus(body);
        return blocking.call(() -> statuses.insert(status).orElseThrow(() -> ApiException.conflict("status " + status.id() + " exists")));
    }

    @PutMapping("/{id}")
    public Mono<StatusDto> update(@PathVariable String id, @RequestBody UpdateStatusRequest body) {
        UUID uuid = Inputs.uuid(id);
        short status = Inputs.status(body);
        return blocking.call(() -> statuses.update(uuid, status).orElseThrow(() -> ApiException.notFound("no status with id " + uuid)));
    }
}
