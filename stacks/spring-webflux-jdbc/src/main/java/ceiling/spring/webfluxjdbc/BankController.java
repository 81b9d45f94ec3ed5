package ceiling.spring.webfluxjdbc;

import ceiling.spring.api.ApiException;
import ceiling.spring.api.ClientDto;
import ceiling.spring.api.CreateClientRequest;
import ceiling.spring.api.Inputs;
import ceiling.spring.api.TransferDto;
import ceiling.spring.api.TransferRequest;
import ceiling.spring.jdbc.BankRepository;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

@RestController
public class BankController {
    private final BankRepository bank;
    private final Blocking blocking;

    public BankController(BankRepository bank, Blocking blocking) {
        this.bank = bank;
        this.blocking = blocking;
    }

    @PostMapping("/clients")
    @ResponseStatus(HttpStatus.CREATED)
    public Mono<ClientDto> create(@RequestBody CreateClientRequest body) {
        long balance = Inputs.openingBalance(body);
        return blocking.call(() -> bank.create(balance));
    }

    @GetMapping("/clients/{id}/balance")
    public Mono<ClientDto> balance(@PathVariable String id) {
        long clientId = Inputs.clientId(id);
        return blocking.call(() -> bank.find(clientId).orElseThrow(() -> ApiException.notFound("no client with id " + clientId)));
    }

    /** The @Transactional repository method runs entirely on one scheduler thread. */
    @PostMapping("/transfers")
    public Mono<TransferDto> transfer(@RequestBody TransferRequest body) {
        TransferDto transfer = Inputs.transfer(body);
        return blocking.call(() -> bank.transfer(transfer));
    }
}
