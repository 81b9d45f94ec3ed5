package ceiling.spring.mvcjdbc;

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

@RestController
@RequestMapping("/status")
public class StatusController {
    private final StatusRepository statuses;

    public StatusController(StatusRepository statuses) {
        this.statuses = statuses;
    }

    @GetMapping("/{id}")
    public StatusDto get(@PathVariable String id) {
        UUID uuid = Inputs.uuid(id);
        return statuses.findById(uuid).orElseThrow(() -> ApiException.notFound("no status with id " + uuid));
    }

    @GetMapping
    public List<StatusDto> getMany(@RequestParam(required = false) String ids) {
        return statuses.findByIds(Inputs.ids(ids));
    }

    @PostMapping
    @ResponseStatus(HttpStatus.CREATED)
    public StatusDto create(@RequestBody CreateStatusRequest body) {
        var status = Inputs.newStatus(body);
        return statuses.insert(status).orElseThrow(() -> ApiException.conflict("status " + status.id() + " exists"));
    }

    @PutMapping("/{id}")
    public StatusDto update(@PathVariable String id, @RequestBody UpdateStatusRequest body) {
        UUID uuid = Inputs.uuid(id);
        return statuses.update(uuid, Inputs.status(body)).orElseThrow(() -> ApiException.notFound("no status with id " + uuid));
    }
}
